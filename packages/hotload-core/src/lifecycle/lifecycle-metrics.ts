import { HotloadMetrics, type HotloadMetricsOptions } from '../metrics/hotload-metrics.js';
import type { ObservableLifecycle } from './observable.js';

/**
 * Records a lifecycle in hotload's Prometheus metrics (see `HOTLOAD_METRIC_NAMES`):
 * source changes and their detection latency, switches, verify failures, drain durations,
 * force-closed connections, the current generation and (read at scrape time) connections
 * of the current and retiring generations. Listens to events only: no cost per query.
 * `prom-client` is loaded on the first call (an optional peer dependency).
 */
export function instrumentLifecycle(
  lifecycle: ObservableLifecycle,
  options: HotloadMetricsOptions = {},
): HotloadMetrics {
  const metrics = new HotloadMetrics(lifecycle.name, options);
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
