/**
 * `npm run bench`: runs every `bench/*.bench.ts` in its own process, one after another
 * (so they never compete for the two cores), and passes their JSON lines through.
 * A benchmark name given on the command line runs only the matching ones.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const benchDir = fileURLToPath(new URL('.', import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(benchDir)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => only.length === 0 || only.some((wanted) => name.includes(wanted)))
  .sort();

let failed = 0;
for (const file of files) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', `${benchDir}${file}`], { stdio: 'inherit' });
  if (result.status !== 0) {
    failed++;
    console.error(`benchmark ${file} failed with exit code ${result.status}`);
  }
}
process.exit(failed === 0 ? 0 : 1);
