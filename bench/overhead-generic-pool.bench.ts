/**
 * Steady-state cost of hotload-generic-pool: `use` of a raw pg.Client running `SELECT 1`
 * (concurrency 16, max 16) on a plain generic-pool and on a HotloadGenericPool following a
 * secret directory, against the same server, alternated in short rounds, each side in a
 * process of its own (see support/qps-comparison.ts; `QPS_MODE=one-process` runs both in
 * this process, as hotload-generic-pool's README figure was taken).
 *
 * Figure (separate processes; `cd bench && node --import tsx overhead-generic-pool.bench.ts`,
 * once, load average 6.4 → 6.1): 0.926 (ci95 0.814–1.115, 15 rounds), client CPU 18.0 vs
 * 17.3 µs a query.
 */
import type pg from 'pg';
import { runQpsBench } from './support/qps-bench.js';
import type { QpsTarget, Side } from './support/qps-workload.js';

const CONCURRENCY = 16;

const selectOne = (client: pg.Client) => client.query('SELECT 1');

async function connected(settings: pg.ClientConfig): Promise<pg.Client> {
  const client = new (await import('pg')).default.Client(settings);
  await client.connect();
  return client;
}

/** A pool of `side`: one query through `use` of one of its clients, and how to end the pool. */
async function openPool(side: Side, { connection, secretDirectory }: QpsTarget) {
  const options = { max: CONCURRENCY };
  const destroy = (client: pg.Client) => client.end();
  if (side === 'plain') {
    const genericPool = (await import('generic-pool')).default;
    const pool = genericPool.createPool({ create: () => connected({ ...connection }), destroy }, options);
    return { query: () => pool.use(selectOne), end: () => pool.drain().then(() => pool.clear()) };
  }
  const { toPgClientSettings } = await import('hotload-core');
  const { HotloadGenericPool } = await import('hotload-generic-pool');
  const pool = await HotloadGenericPool.create<pg.Client>({
    factory: {
      create: (config, host) => connected(toPgClientSettings({}, config, host) as pg.ClientConfig),
      destroy,
      query: async (client, text) => (await client.query(text)).rows,
    },
    pool: options,
    hotload: { source: { secretDirectory } },
  });
  return { query: () => pool.use(selectOne), end: () => pool.end() };
}

await runQpsBench({
  secretPrefix: 'hotload-bench-overhead-generic-pool-',
  plan: { rounds: 15, roundMillis: 800 },
  workloads: [
    {
      bench: 'overhead-generic-pool',
      concurrency: CONCURRENCY,
      async open(side, target) {
        const pool = await openPool(side, target);
        // Every connection opened before the warm-up.
        await Promise.all(Array.from({ length: CONCURRENCY }, pool.query));
        return pool;
      },
    },
  ],
});
