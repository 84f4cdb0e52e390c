/**
 * Steady-state cost of hotload-postgres-js: `sql\`SELECT 1\`` (concurrency 16, max 16) on
 * plain postgres.js and on a hotload-postgres-js `sql` following a secret directory, against
 * the same server, alternated in short rounds, each side in a process of its own (see
 * support/qps-comparison.ts; `QPS_MODE=one-process` runs both in this process).
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
