/** The DatabaseClaim CRD as the YAML file in `deploy/` (header comment + document). */
import { stringify } from 'yaml';
import { claimCustomResourceDefinition } from './claim-crd.js';

/** Text of `deploy/01-crd.yaml`. */
export function crdYaml(): string {
  return `# GENERATED from the reconciler's claim schema (packages/claim-controller/src/claim-crd.ts):
# node scripts/pnpm.mjs --filter hotload-claim-controller run crd
${stringify(claimCustomResourceDefinition(), { lineWidth: 0 })}`;
}
