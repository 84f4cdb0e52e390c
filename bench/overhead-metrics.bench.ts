/**
 * Steady-state cost of hotload-pg with its observability on: the overhead benchmark's
 * workload (concurrency 16, alternated rounds, median of per-round ratios) on a plain
 * pg.Pool and on a hotload-pg Pool with Prometheus metrics, a logger and a subscribed
 * diagnostics channel, its registry scraped after every round as Prometheus would.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { startCluster } from 'hotload-test-support';
import pg from 'pg';
import { Registry } from 'prom-client';
import {
  alternatingRounds,
  median,
  medianRatio,
  medianRatioInterval,
  superuserSecretFolder,
} from './support/alternating-rounds.js';
import { builtHotloadPg } from './support/built-hotload-pg.js';
import { runLoops } from './support/query-loops.js';

const { Pool: HotloadPool } = builtHotloadPg;

const CONCURRENCY = 16;
const ROUNDS = 9;
const ROUND_MILLIS = 1_500;

interface Queryable {
  query(text: string): Promise<unknown>;
}

/** Queries per second of `pool` over ROUND_MILLIS with CONCURRENCY loops. */
async function measure(pool: Queryable): Promise<number> {
  const { count, seconds } = await runLoops(CONCURRENCY, ROUND_MILLIS, () => pool.query('SELECT 1'));
  return count / seconds;
}

const cluster = await startCluster();
const { secretDirectory, remove: removeSecret } = await superuserSecretFolder(
  cluster,
  'hotload-bench-overhead-metrics-',
);
const onSwitch = (): void => {};
diagnosticsChannel.subscribe('hotload:switch', onSwitch);
try {
  const superuser = cluster.connectionConfig();
  const registry = new Registry();
  let logLines = 0;
  const count = (): void => {
    logLines++;
  };
  const plain = new pg.Pool({ ...superuser, max: CONCURRENCY });
  const hotload = await HotloadPool.create({
    max: CONCURRENCY,
    hotload: {
      source: { secretDirectory },
      metrics: { registry },
      logger: { debug: count, info: count, warn: count, error: count },
    },
  });
  let scrapeBytes = 0;
  const { baseline: pgQps, candidate: hotloadQps } = await alternatingRounds({
    rounds: ROUNDS,
    baseline: () => measure(plain),
    candidate: () => measure(hotload),
    afterRound: async () => {
      scrapeBytes = (await registry.metrics()).length;
    },
  });
  await plain.end();
  await hotload.end();
  const ratio = medianRatio(pgQps, hotloadQps);
  console.log(
    JSON.stringify({
      bench: 'overhead-metrics',
      hotload_qps: Math.round(median(hotloadQps)),
      pg_qps: Math.round(median(pgQps)),
      ratio: Number(ratio.toFixed(3)),
      ratio_ci95: medianRatioInterval(pgQps, hotloadQps),
      rounds: ROUNDS,
      concurrency: CONCURRENCY,
      scrape_bytes: scrapeBytes,
      log_lines: logLines,
    }),
  );
} finally {
  diagnosticsChannel.unsubscribe('hotload:switch', onSwitch);
  await cluster.stop();
  await removeSecret();
}
