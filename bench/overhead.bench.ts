/**
 * Steady-state cost of hotload-pg: the same query workload (concurrency 16) on a plain
 * pg.Pool and on a hotload-pg Pool following a secret directory, against the same server,
 * alternated in several rounds; medians reported (ratio: median of per-round ratios).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { startCluster } from 'hotload-test-support';
import pg from 'pg';

// The built package, as users run it: tsx would load hotload-pg's TypeScript sources with
// esbuild's keepNames wrappers around every closure, a cost pg (plain JS) does not pay.
// `npm run bench` builds the packages first.
const distUrl = new URL('../packages/hotload-pg/dist/index.js', import.meta.url).href;
const { Pool: HotloadPool } = (await import(distUrl)) as typeof import('hotload-pg');

const CONCURRENCY = 16;
const ROUNDS = 9;
const ROUND_MILLIS = 1_500;

interface Queryable {
  query(text: string): Promise<unknown>;
}

/** Queries per second of `pool` over ROUND_MILLIS with CONCURRENCY loops. */
async function measure(pool: Queryable): Promise<number> {
  let count = 0;
  const started = performance.now();
  const deadline = started + ROUND_MILLIS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        await pool.query('SELECT 1');
        count++;
      }
    }),
  );
  return count / ((performance.now() - started) / 1000);
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const cluster = await startCluster();
const dir = await mkdtemp(join(tmpdir(), 'hotload-bench-overhead-'));
try {
  const superuser = cluster.connectionConfig();
  await new AtomicSecretWriter(dir).write({
    hostname: superuser.host,
    port: String(superuser.port),
    username: superuser.user,
    password: superuser.password,
    database: superuser.database,
  });
  const plain = new pg.Pool({ ...superuser, max: CONCURRENCY });
  const hotload = await HotloadPool.create({
    max: CONCURRENCY,
    hotload: { source: { secretDirectory: dir } },
  });
  await measure(plain); // warm-up: connections and JIT
  await measure(hotload);
  const pgQps: number[] = [];
  const hotloadQps: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which goes first so drift (CPU frequency, autovacuum) hits both alike.
    if (round % 2 === 0) {
      pgQps.push(await measure(plain));
      hotloadQps.push(await measure(hotload));
    } else {
      hotloadQps.push(await measure(hotload));
      pgQps.push(await measure(plain));
    }
  }
  await plain.end();
  await hotload.end();
  // Each round's two measurements are adjacent in time: the median of per-round ratios
  // cancels slow drift (other load on the machine) better than a ratio of medians.
  const ratio = median(hotloadQps.map((qps, round) => qps / pgQps[round]!));
  console.log(
    JSON.stringify({
      bench: 'overhead',
      hotload_qps: Math.round(median(hotloadQps)),
      pg_qps: Math.round(median(pgQps)),
      ratio: Number(ratio.toFixed(3)),
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
    }),
  );
} finally {
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
}
