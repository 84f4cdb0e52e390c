import type { ConnectionCounts } from '../metrics/hotload-metrics.js';
import type { SourceWatcher } from '../source-watcher.js';
import type { LifecycleEvents } from './events.js';

/**
 * What metrics, logs and diagnostics observe: the lifecycle's events and a few read-only
 * facts, not a concrete pool (so no observer imports the class it observes).
 */
export interface ObservableLifecycle {
  /** The name in metric labels, diagnostics messages and log lines. */
  readonly name: string;
  readonly sourceWatcher: SourceWatcher;
  /** Id of the generation serving now (`undefined` before the first). */
  readonly generation: number | undefined;
  readonly connectionCounts: ConnectionCounts;
  /** True once `close()` was called. */
  readonly closed: boolean;
  on<K extends keyof LifecycleEvents>(event: K, listener: (...args: LifecycleEvents[K]) => void): unknown;
}
