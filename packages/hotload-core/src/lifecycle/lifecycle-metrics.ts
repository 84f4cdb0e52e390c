import { HotloadMetrics, type HotloadMetricsOptions } from '../metrics/hotload-metrics.js';
import type { ObservableLifecycle } from './observable.js';

/** Options of {@link instrumentLifecycle}: where to register, and the `source` label. */
export interface InstrumentLifecycleOptions extends HotloadMetricsOptions {
  /** The `source` label. Default: the lifecycle's `name`. */
  readonly name?: string;
}

/**
 * Records a lifecycle in hotload's Prometheus metrics (see `HOTLOAD_METRIC_NAMES`):
 * source changes and their detection latency, switches, verify failures, drain durations,
 * force-closed connections, the current generation and (read at scrape time) connections
 * of the current and retiring generations. Listens to events only: no cost per query.
 * `prom-client` is loaded on the first call (an optional peer dependency).
 */
export function instrumentLifecycle(
  lifecycle: ObservableLifecycle,
  options: InstrumentLifecycleOptions = {},
): HotloadMetrics {
  const metrics = new HotloadMetrics(options.name ?? lifecycle.name, options);
  lifecycle.sourceWatcher.on('change', (change) => metrics.recordChange(change));
  if (lifecycle.generation !== undefined) metrics.recordSwitch(lifecycle.generation, true);
  lifecycle.on('switch', (event) =>
    metrics.recordSwitch(event.toGeneration, event.fromGeneration === undefined),
  );
  lifecycle.on('verifyFailed', () => metrics.recordVerifyFailure());
  lifecycle.on('drained', (event) => metrics.recordDrained(event.drainMillis));
  lifecycle.on('forceClosed', (event) => metrics.recordForceClosed(event.connections));
  metrics.trackConnections(() => (lifecycle.closed ? undefined : lifecycle.connectionCounts));
  return metrics;
}
