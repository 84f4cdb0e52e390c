import type { ConnectionConfig } from './config.js';
import type { HotloadLogger } from './logging/logger.js';

/** A real change of a watched source: emitted only when the fingerprint changed. */
export interface ChangeEvent {
  /** The fingerprint of the config this one replaces (undefined if there was none). */
  readonly previousFingerprint: string | undefined;
  /** The new, validated config. */
  readonly config: ConnectionConfig;
  /**
   * ms since epoch: the newest mtime among the files read (when the file changed); for a
   * kubelet volume, of its `..data` link too (when the new version became visible).
   */
  readonly changedAt: number;
  /**
   * ms since epoch: when the watcher saw the first file-system event of this change (a
   * poll's stat comparison in `'polling'` mode, the resync tick when only the resync found it).
   */
  readonly detectedAt: number;
  /** ms since epoch: when the change event was emitted. */
  readonly emittedAt: number;
}

/** How a `SourceWatcher` notices file changes (see {@link SourceWatcherOptions.watchMode}). */
export type WatchMode = 'events' | 'polling' | 'none';

/** Options of a `SourceWatcher`. */
export interface SourceWatcherOptions {
  /**
   * The source is read this many ms after the first file-system event of a burst; the
   * burst's later events during the wait join that read, events during the read cause one
   * more. Default 0 (the next timer turn): reads are snapshot-consistent and a read
   * disturbed by more events is confirmed by the next one, so waiting only delays the
   * switch. A larger value saves reads when files are edited one by one in place.
   */
  debounceMillis?: number;
  /**
   * How file changes are noticed between resyncs:
   * - `'events'` (default): the operating system's file events (inotify, FSEvents, ...)
   *   through chokidar; a change is seen within milliseconds.
   * - `'polling'`: chokidar stats the watched directories and their entries every
   *   `pollIntervalMillis` (fs.watchFile), for volumes whose changes raise no event: NFS,
   *   SMB, some CSI drivers, bind mounts changed from another mount namespace.
   * - `'none'`: no watch; changes are found by the periodic resync only.
   */
  watchMode?: WatchMode;
  /** Stat interval of `watchMode: 'polling'`. Default 1000 ms. */
  pollIntervalMillis?: number;
  /**
   * The safety net under any watch mode: every this many ms the source is re-read and its
   * fingerprint compared with the current one; a change no event reported is then emitted
   * like any other. Cheap: a few small reads, and nothing is emitted (so nothing reloads)
   * while the fingerprint is the same. Default 30 000 ms; 0 turns it off.
   */
  resyncIntervalMillis?: number;
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
