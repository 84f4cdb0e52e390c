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
  readonly sourceWatcher: SourceWatcher;
  /** Id of the generation serving now (`undefined` before the first). */
  readonly generation: number | undefined;
  readonly connectionCounts: ConnectionCounts;
  /** True once `close()` was called. */
  readonly closed: boolean;
  // One overload per event rather than one generic signature over `LifecycleEvents`: the
  // generic form is not assignable from `EventEmitter<LifecycleEvents>['on']` as typed by
  // @types/node 25 and later, which broke every consumer compiling with skipLibCheck false.
  on(event: 'switch', listener: (event: SwitchEvent) => void): unknown;
  on(event: 'verifyFailed', listener: (event: VerifyFailedEvent) => void): unknown;
  on(event: 'drained', listener: (event: DrainedEvent) => void): unknown;
  on(event: 'forceClosed', listener: (event: ForceClosedEvent) => void): unknown;
  on(event: 'sourceError', listener: (event: SourceErrorEvent) => void): unknown;
}
