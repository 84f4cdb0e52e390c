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
   * When the first read fails, `start()` still rejects, but the watcher keeps watching
   * (instead of closing) and emits `change` as soon as the source becomes valid. Default
   * false. hotload's pools set it: a pod may start before its secret is published.
   */
  keepWatchingOnStartError?: boolean;
  /**
   * Whether the file watches keep the process alive (chokidar's `persistent`). Default
   * true; hotload's pools set false, so a program using one exits when its own work is
   * done, as it would with the plain driver. (The watcher's timers never keep it alive.)
   */
  persistent?: boolean;
}
