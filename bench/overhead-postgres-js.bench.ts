/**
 * Steady-state cost of hotload-postgres-js: `sql\`SELECT 1\`` (concurrency 16, max 16) on
 * plain postgres.js and on a hotload-postgres-js `sql` following a secret directory, against
 * the same server, alternated in short rounds, each side in a process of its own (see
 * support/qps-comparison.ts; `QPS_MODE=one-process` runs both in this process).
 *
 * Figures (separate processes; `cd bench && node --import tsx overhead-postgres-js.bench.ts`):
 * with the follower made when a query runs, load average 5.9 → 9.7: 1.034 (ci95
 * 0.984–1.068, 60 rounds), client CPU 20.3 vs 20.1 µs a query, no mark-compact; load 8.9 →
 * 12.5: 1.015 (ci95 0.905–1.133, 60 rounds), 23.2 vs 22.6 µs; load 9, 15 rounds: 1.031
 * (ci95 0.784–1.233), 21.4 vs 21.4 µs. Before that change, in separate
 * processes: 0.714, 0.779, 0.729 (ci95 highs below 0.96), CPU 28–29 vs 20–21 µs, hotload's
 * process promoting queries (8 to 24 mark-compacts a run, plain none). One process (older
 * figure): 0.843 (ci95 0.775–1.157), 45.6 vs 40.5 µs, 36 mark-compacts a run; on the final
 * code (`QPS_MODE=one-process TSX_TSCONFIG_PATH=../tsconfig.base.json`, load 10.1 → 14.8):
 * 0.875 (ci95 0.827–0.913, 60 rounds), 59.5 vs 51.2 µs.
 */
import { runQpsBench } from './support/qps-bench.js';

const CONCURRENCY = 16;

await runQpsBench({
  secretPrefix: 'hotload-bench-overhead-postgres-js-',
  // At least 15 rounds; while the ratio's ci95 is wider than ±0.02, up to 60.
  plan: { rounds: 15, roundMillis: 800, maxRounds: 60, targetHalfWidth: 0.02 },
  workloads: [
    {
      bench: 'overhead-postgres-js',
      concurrency: CONCURRENCY,
      async open(side, { connection, secretDirectory }) {
        const options = { max: CONCURRENCY, onnotice: () => undefined };
        const { user, ...login } = connection;
        const sql =
          side === 'plain'
            ? (await import('postgres')).default({ ...login, username: user, ...options })
            : await (await import('hotload-postgres-js')).createHotloadSql({
                postgres: options,
                hotload: { source: { secretDirectory } },
              });
        // Every connection opened before the warm-up: 16 queries at once on 16 connections.
        await Promise.all(Array.from({ length: CONCURRENCY }, () => sql`SELECT 1`));
        return { query: () => sql`SELECT 1`, end: () => sql.end() };
      },
    },
  ],
});
