/** Writes deploy/01-crd.yaml from the reconciler's claim schema (see src/claim-crd.ts). */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { crdYaml } from '../src/claim-crd-yaml.js';

const target = fileURLToPath(new URL('../../../deploy/01-crd.yaml', import.meta.url));
writeFileSync(target, crdYaml());
console.log(`wrote ${target}`);
