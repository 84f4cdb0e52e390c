/**
 * Steady-state cost of hotload-knex: the same Knex workload (concurrency 16, `raw` and a
 * query-builder select alternately, pool max 16) on plain Knex with the pg client and on a
 * hotload-knex instance following a secret directory, against the same server, alternated
 * in short rounds, each side in a process of its own (see support/qps-comparison.ts;
 * `QPS_MODE=one-process` runs both in this process, as the figures before it were taken).
 * The ratio is the median of the per-round ratios: each compares two back-to-back
 * measurements, so load from other processes on the machine cancels out better than in a
 * ratio of two medians. Each side's client CPU time per query is reported too.
 *
 * Figures (separate processes; `cd bench && node --import tsx overhead-knex.bench.ts`):
 * load average 13.2 → 8.6: 0.977 (ci95 0.916–1.036, 60 rounds), client CPU 33.4 vs 33.4 µs
 * a query; again at load 9.4 → 9.3: 0.999 (ci95 0.916–1.074, 60 rounds), 33.1 vs 32.6 µs;
 * a third at load 7.7 → 10.1: 1.044 (ci95 0.931–1.194), 41.7 vs 44.0 µs;
 * a first run with 15 rounds at load 9 to 11: 0.887 (ci95 0.734–1.225), 32.3 vs
 * 32.7 µs. Queries waited 46–70 µs each for a CPU: the ratio's interval is that noise.
 * One process (before): 0.869 (ci95 0.689–1.103) and 1.019 (ci95 0.95–1.091).
 */
import type { Knex } from 'knex';
import { runQpsBench } from './support/qps-bench.js';

const CONCURRENCY = 16;

await runQpsBench({
  secretPrefix: 'hotload-bench-overhead-knex-',
  // At least 15 rounds; while the ratio's ci95 is wider than ±0.02, up to 60.
  plan: { rounds: 15, roundMillis: 800, maxRounds: 60, targetHalfWidth: 0.02 },
  workloads: [
    {
      bench: 'overhead-knex',
      concurrency: CONCURRENCY,
      async open(side, { connection, secretDirectory }) {
        const pool = { min: 0, max: CONCURRENCY };
        const db: Knex =
          side === 'plain'
            ? (await import('knex')).default({ client: 'pg', connection: { ...connection }, pool })
            : await (await import('hotload-knex')).createHotloadKnex({
                hotload: { source: { secretDirectory } },
                pool,
              });
        const query = (n: number) =>
          n % 2 === 0 ? db.raw('SELECT 1') : db('pg_class').select('relname').where('oid', 1259).first();
        // Every connection opened before the warm-up.
        await Promise.all(Array.from({ length: CONCURRENCY }, (_, n) => query(n)));
        return { query, end: () => db.destroy() };
      },
    },
  ],
});
