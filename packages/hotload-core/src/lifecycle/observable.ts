import type { ConnectionCounts } from '../metrics/hotload-metrics.js';
import type { SourceWatcher } from '../source-watcher.js';
import type {
  DrainedEvent,
  ForceClosedEvent,
  SourceErrorEvent,
  SwitchEvent,
  VerifyFailedEvent,
} from './events.js';

/**
 * What metrics, logs and diagnostics observe: the lifecycle's events and a few read-only
 * facts, not a concrete pool (so no observer imports the class it observes).
 */
export interface ObservableLifecycle {
  /** The name in metric labels, diagnostics messages and log lines. */
  readonly name: string;
  /** The watcher of the lifecycle's source (its `change` events, watch mode, current config). */
  readonly sourceWatcher: SourceWatcher;
  /** Id of the generation serving now (`undefined` before the first). */
  readonly generation: number | undefined;
  /**
   * Open connections of the serving generation and of the retired ones still draining, read by
   * the `hotload_connections` gauge.
   */
  readonly connectionCounts: ConnectionCounts;
  /** True once `close()` was called. */
  readonly closed: boolean;
  // One overload per event rather than one generic signature over `LifecycleEvents`: the
  // generic form is not assignable from `EventEmitter<LifecycleEvents>['on']` as typed by
  // @types/node 25 and later, which broke every consumer compiling with skipLibCheck false.
  /** Listens for {@link SwitchEvent}: new work moved to a freshly verified generation. */
  on(event: 'switch', listener: (event: SwitchEvent) => void): unknown;
  /**
   * Listens for {@link VerifyFailedEvent}: a candidate failed verification; the current
   * generation keeps serving.
   */
  on(event: 'verifyFailed', listener: (event: VerifyFailedEvent) => void): unknown;
  /** Listens for {@link DrainedEvent}: a retired generation closed its last connection. */
  on(event: 'drained', listener: (event: DrainedEvent) => void): unknown;
  /** Listens for {@link ForceClosedEvent}: connections still in use at the drain timeout were closed. */
  on(event: 'forceClosed', listener: (event: ForceClosedEvent) => void): unknown;
  /**
   * Listens for {@link SourceErrorEvent}: the source is unreadable or invalid; the current
   * generation keeps serving.
   */
  on(event: 'sourceError', listener: (event: SourceErrorEvent) => void): unknown;
}
