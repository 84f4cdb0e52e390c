// ESM: every installed hotload tarball loads through `import`; prints the export names.
import { readFileSync } from 'node:fs';

const { dependencies } = JSON.parse(readFileSync('package.json', 'utf8'));
const packed = Object.keys(dependencies).filter((name) => dependencies[name].startsWith('file:'));
const names = {};
for (const name of packed) names[name] = Object.keys(await import(name)).sort();
console.log(JSON.stringify(names));
