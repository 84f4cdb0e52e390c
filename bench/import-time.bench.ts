/**
 * What importing each claim package costs a process (issue 26: folder-mode users load no
 * Kubernetes client). Each sample is a fresh `node` that imports the built package and
 * exits; the median of several, beside a process that imports nothing (the floor). The
 * CommonJS load also says whether `@kubernetes/client-node` was loaded.
 *
 *   node scripts/pnpm.mjs run build && cd bench && node --import tsx import-time.bench.ts
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const runs = 7;
const cwd = fileURLToPath(new URL('.', import.meta.url));

/** Wall milliseconds of one `node -e <code>`, and what it printed. */
function sample(code: string, type: 'module' | 'commonjs'): { ms: number; out: string } {
  const started = performance.now();
  const out = execFileSync(process.execPath, [`--input-type=${type}`, '-e', code], { cwd, encoding: 'utf8' });
  return { ms: performance.now() - started, out: out.trim() };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const floor = median(Array.from({ length: runs }, () => sample('', 'module').ms));
for (const name of ['hotload-claim-reconciler', 'hotload-claim-controller']) {
  const times = Array.from({ length: runs }, () => sample(`await import('${name}')`, 'module').ms);
  const loadsKube = sample(
    `require('${name}'); console.log(Object.keys(require.cache).some((p) => p.includes('@kubernetes/client-node')))`,
    'commonjs',
  ).out;
  console.log(
    JSON.stringify({
      bench: 'import-time',
      package: name,
      runs,
      import_p50_ms: Math.round(median(times)),
      node_floor_p50_ms: Math.round(floor),
      above_floor_ms: Math.round(median(times) - floor),
      loads_kubernetes_client: loadsKube === 'true',
    }),
  );
}
