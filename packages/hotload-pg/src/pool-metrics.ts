import { HotloadMetrics, type HotloadMetricsOptions } from 'hotload-core';
import type { Pool } from './pool.js';
import { poolSourceName } from './pool-source-name.js';

/** Options of {@link instrumentPool}: where to register, and the `source` label. */
export interface InstrumentPoolOptions extends HotloadMetricsOptions {
  /** The `source` label. Default: the pool's `hotload.name`, else its source's description. */
  readonly name?: string;
}

/**
 * Records a pool's lifecycle in hotload's Prometheus metrics (see `HOTLOAD_METRIC_NAMES`
 * in hotload-core): source changes and their detection latency, switches, verify
 * failures, drain durations, force-closed clients, the current generation, and (read at
 * scrape time) connections of the current and retiring generations.
 *
 * It only listens to events the pool already emits, so queries cost exactly what they
 * cost without it. `hotload: { metrics: {...} }` in the pool's config calls it for you;
 * call it yourself for pools made elsewhere (e.g. through `createPgModule`).
 * `prom-client` is loaded on the first call (an optional peer dependency).
 */
export function instrumentPool(pool: Pool, options: InstrumentPoolOptions = {}): HotloadMetrics {
  const metrics = new HotloadMetrics(poolSourceName(pool, options.name), options);
  pool.sourceWatcher?.on('change', (change) => metrics.recordChange(change));
  if (pool.generation !== undefined) metrics.recordSwitch(pool.generation, true);
  pool.on('switch', (event) => metrics.recordSwitch(event.toGeneration, event.fromGeneration === undefined));
  pool.on('verifyFailed', () => metrics.recordVerifyFailure());
  pool.on('drained', (event) => metrics.recordDrained(event.drainMillis));
  pool.on('forceClosed', (event) => metrics.recordForceClosed(event.clients));
  metrics.trackConnections(() => (pool.ended ? undefined : pool.connectionCounts));
  return metrics;
}
