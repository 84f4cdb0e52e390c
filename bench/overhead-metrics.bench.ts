/**
 * Steady-state cost of hotload-pg with its observability on: the overhead benchmark's
 * workload (concurrency 16, alternated rounds, median of per-round ratios) on a plain
 * pg.Pool and on a hotload-pg Pool with Prometheus metrics, a logger and a subscribed
 * diagnostics channel, its registry scraped after every round as Prometheus would.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { startCluster } from 'hotload-test-support';
import pg from 'pg';
import { Registry } from 'prom-client';

// The built packages, as users run them (see overhead.bench.ts); `npm run bench` builds first.
const distUrl = new URL('../packages/hotload-pg/dist/index.js', import.meta.url).href;
const { Pool: HotloadPool } = (await import(distUrl)) as typeof import('hotload-pg');

const CONCURRENCY = 16;
const ROUNDS = 9;
const ROUND_MILLIS = 1_500;

interface Queryable {
  query(text: string): Promise<unknown>;
}

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
const dir = await mkdtemp(join(tmpdir(), 'hotload-bench-overhead-metrics-'));
const onSwitch = (): void => {};
diagnosticsChannel.subscribe('hotload:switch', onSwitch);
try {
  const superuser = cluster.connectionConfig();
  await new AtomicSecretWriter(dir).write({
    hostname: superuser.host,
    port: String(superuser.port),
    username: superuser.user,
    password: superuser.password,
    database: superuser.database,
  });
  const registry = new Registry();
  let logLines = 0;
  const count = (): void => {
    logLines++;
  };
  const plain = new pg.Pool({ ...superuser, max: CONCURRENCY });
  const hotload = await HotloadPool.create({
    max: CONCURRENCY,
    hotload: {
      source: { secretDirectory: dir },
      metrics: { registry },
      logger: { debug: count, info: count, warn: count, error: count },
    },
  });
  await measure(plain);
  await measure(hotload);
  const pgQps: number[] = [];
  const hotloadQps: number[] = [];
  let scrapeBytes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      pgQps.push(await measure(plain));
      hotloadQps.push(await measure(hotload));
    } else {
      hotloadQps.push(await measure(hotload));
      pgQps.push(await measure(plain));
    }
    scrapeBytes = (await registry.metrics()).length;
  }
  await plain.end();
  await hotload.end();
  const ratio = median(hotloadQps.map((qps, round) => qps / pgQps[round]!));
  console.log(
    JSON.stringify({
      bench: 'overhead-metrics',
      hotload_qps: Math.round(median(hotloadQps)),
      pg_qps: Math.round(median(pgQps)),
      ratio: Number(ratio.toFixed(3)),
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
      scrape_bytes: scrapeBytes,
      log_lines: logLines,
    }),
  );
} finally {
  diagnosticsChannel.unsubscribe('hotload:switch', onSwitch);
  await cluster.stop();
  await rm(dir, { recursive: true, force: true });
}
