import type { ConnectionConfig } from './config.js';
import type { HotloadLogger } from './logging/logger.js';

/** A real change of a watched source: emitted only when the fingerprint changed. */
export interface ChangeEvent {
  /** The fingerprint of the config this one replaces (undefined if there was none). */
  readonly previousFingerprint: string | undefined;
  /** The new, validated config. */
  readonly config: ConnectionConfig;
  /** ms since epoch: the newest mtime among the files read (when the file changed). */
  readonly changedAt: number;
  /** ms since epoch: when the watcher saw the first file-system event of this change. */
  readonly detectedAt: number;
  /** ms since epoch: when the change event was emitted. */
  readonly emittedAt: number;
}

/** Options of a `SourceWatcher`. */
export interface SourceWatcherOptions {
  /**
   * Bursts of file-system events within this many ms are read once. Default 10: the
   * kubelet's swap is a handful of events within a millisecond or two.
   */
  debounceMillis?: number;
  /**
   * Where to log changes (info) and source errors (warn), pino-style. Default: silent.
   * Lines carry `source` (paths) and fingerprints, never a secret.
   */
  logger?: HotloadLogger;
  /**
   * When the initial read fails, keep watching instead of stopping: `start()` still
   * rejects with the `SourceError`, and the first valid read is emitted as a `change`
   * (with no `previousFingerprint`). The generation manager uses it so that a service
   * started before its secret was mounted serves as soon as it is. Default false.
   */
  keepWatchingOnStartError?: boolean;
  /**
   * Whether the file watch keeps the process alive on its own (chokidar's `persistent`).
   * Default true; the generation manager sets false, so a service ends when its work
   * ends even if nobody closed its pool.
   */
  persistent?: boolean;
}
