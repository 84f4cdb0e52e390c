import { EventEmitter } from 'node:events';
import { basename, dirname, resolve } from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import { clearThrottleTimers, rawEventPaths, refuseThrottledActions } from './chokidar-internals.js';
import type { ConnectionConfig } from './config.js';
import { HOTLOAD_CHANNELS, publishDiagnostic } from './diagnostics/channels.js';
import { isSourceError, type SourceError } from './errors.js';
import type { ChangeEvent, SourceWatcherOptions, WatchMode } from './events.js';
import { type HotloadLogger, loggedError, silentLogger } from './logging/logger.js';
import { relabel } from './snapshot-source.js';
import type { ConnectionSource, SourceSnapshot } from './source.js';

/** Events of a {@link SourceWatcher}. */
export interface SourceWatcherEvents {
  /** The source changed for real (new fingerprint) and is valid. */
  change: [ChangeEvent];
  /** The source is invalid or unreadable; the last good config stays `current`. */
  error: [SourceError];
}

/**
 * 0: a read starts on the timer turn after the first event of a burst (events already
 * queued in that turn join it). Waiting longer buys nothing: reads are snapshot-consistent,
 * and a read disturbed by later events is confirmed by the next one (see `#reread`), while
 * every millisecond waited is a millisecond added to each switch. (It was 10.)
 */
const DEFAULT_DEBOUNCE_MILLIS = 0;
const DEFAULT_POLL_INTERVAL_MILLIS = 1000;
const DEFAULT_RESYNC_INTERVAL_MILLIS = 30_000;
const RECOVERY_POLL_MILLIS = 1000;
const WATCH_MODES: readonly WatchMode[] = ['events', 'polling', 'none'];

/** Closes a chokidar watcher, timers included (also those its unfinished work would arm). */
async function closeChokidar(watcher: FSWatcher | undefined): Promise<void> {
  if (!watcher) return;
  refuseThrottledActions(watcher);
  clearThrottleTimers(watcher);
  await watcher.close();
}

/**
 * A kubelet timestamped folder (`..2026_11_23_15_12_44.123`) directly in a watched
 * directory. Its events (created, filled, removed) change nothing a read sees: reads go
 * through `..data`, which changes only by the rename that the swap's own event reports.
 * Skipping them lets the read start at the swap, not be busy with one begun at the new
 * folder. (`..data` and `..data_tmp` are not such folders: their events count.)
 */
function isTimestampedFolder(path: string, dirs: ReadonlySet<string>): boolean {
  return /^\.\.\d/.test(basename(path)) && dirs.has(dirname(path));
}

/** A non-negative finite number of milliseconds, or a RangeError naming the option. */
function millisOption(name: string, value: number | undefined, fallback: number): number {
  const millis = value ?? fallback;
  if (!Number.isFinite(millis) || millis < 0) throw new RangeError(`${name} must be >= 0`);
  return millis;
}

/**
 * Watches a {@link ConnectionSource} with chokidar and emits `change` only when the
 * config's fingerprint changes, `error` (a secret-free {@link SourceError}) when the source
 * is invalid; the last good config stays `current` and the watcher recovers by itself
 * when the source becomes valid again.
 *
 * How: for every watched directory, chokidar watches its *parent* with depth 1, filtered
 * to the directory and its direct entries. So the `..data` swap (a rename in the
 * directory), in-place writes, rename-over writes, and deletion and re-creation of the
 * directory itself are all seen, and the watch re-arms when the directory comes back.
 * While the source is invalid it is also re-read every second (while `missing`, with the
 * watch set up again first, in case the parent directory was deleted too): a directory
 * re-created while the watch re-arms can be read half-written with the events of its last
 * files lost, and must not stay an error until the resync.
 * Any raw `fs.watch` event chokidar reports for these paths schedules one
 * re-read of the whole source `debounceMillis` (default 0: the next timer turn) after the
 * first event of a burst (later events of the burst do not push it back); reads never
 * overlap, and events that arrive while a read runs cause exactly one more read after it.
 * Events about the kubelet's timestamped folders are skipped (they change nothing a read
 * sees), so a kubelet write is read from its swap on; an earlier event (a key file
 * created ahead of the swap) may still start a read before it, and the swap reads again.
 * Sources read consistently (a `..data` swap mid-read makes the read start over), so
 * reading during a burst is safe.
 *
 * A read during which more events arrived is emitted only if the next read agrees (see
 * `#reread`): half-way states of non-atomic edits are not emitted. A read through a
 * kubelet `..data` snapshot ({@link SourceSnapshot.atomic}) cannot be half-way and is
 * emitted at once. Repeated identical errors are emitted once until the source changes or
 * recovers.
 *
 * Where file events do not come (NFS, some CSI drivers, an edit below the watched level),
 * `watchMode: 'polling'` makes chokidar stat the same paths instead (its stat comparisons
 * arrive as the same raw events), `'none'` watches nothing, and in every mode a resync
 * re-reads the source every `resyncIntervalMillis` through the same path as an event, so a
 * missed change is emitted at the latest one interval later, and an unchanged source
 * emits nothing.
 */
export class SourceWatcher extends EventEmitter<SourceWatcherEvents> {
  /** The source this watcher reads. */
  readonly source: ConnectionSource;
  /**
   * Milliseconds from the first file event of a burst to the re-read
   * (see {@link SourceWatcherOptions.debounceMillis}; default 0).
   */
  readonly debounceMillis: number;
  /** How file changes are noticed (see {@link SourceWatcherOptions.watchMode}). */
  readonly watchMode: WatchMode;
  /** Stat interval of the `'polling'` mode. */
  readonly pollIntervalMillis: number;
  /** Period of the re-read that catches changes no event reported; 0 when off. */
  readonly resyncIntervalMillis: number;
  #resync: NodeJS.Timeout | undefined;
  readonly #logger: HotloadLogger;
  #current: ConnectionConfig | undefined;
  #watcher: FSWatcher | undefined;
  #closed = false;
  #started: Promise<ConnectionConfig> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #firstEventAt: number | undefined;
  #reading: Promise<void> | undefined;
  #lastErrorMessage: string | undefined;
  readonly #dirs: ReadonlySet<string>;
  readonly #keepWatchingOnStartError: boolean;
  readonly #persistent: boolean;

  constructor(source: ConnectionSource, options: SourceWatcherOptions = {}) {
    super();
    this.source = source;
    this.debounceMillis = millisOption('debounceMillis', options.debounceMillis, DEFAULT_DEBOUNCE_MILLIS);
    this.watchMode = options.watchMode ?? 'events';
    if (!WATCH_MODES.includes(this.watchMode)) {
      throw new RangeError(`watchMode must be one of ${WATCH_MODES.join(', ')}`);
    }
    this.pollIntervalMillis = millisOption(
      'pollIntervalMillis',
      options.pollIntervalMillis,
      DEFAULT_POLL_INTERVAL_MILLIS,
    );
    this.resyncIntervalMillis = resyncInterval(
      millisOption('resyncIntervalMillis', options.resyncIntervalMillis, DEFAULT_RESYNC_INTERVAL_MILLIS),
      source.rereadIntervalMillis,
    );
    this.#logger = options.logger ?? silentLogger;
    this.#keepWatchingOnStartError = options.keepWatchingOnStartError ?? false;
    this.#persistent = options.persistent ?? true;
    this.#dirs = new Set(source.watchPaths.map((p) => resolve(p)));
  }

  /** The last good config (undefined before `start()` resolved). */
  get current(): ConnectionConfig | undefined {
    return this.#current;
  }

  /**
   * Starts watching, then reads the source once. Resolves with the initial config once
   * the watcher is ready; rejects with a {@link SourceError} (and stops watching, unless
   * `keepWatchingOnStartError`) if the source is invalid. Calling it again returns the
   * same promise.
   *
   * Its timers never keep the process alive, nor do its file watches with
   * `persistent: false`.
   */
  start(): Promise<ConnectionConfig> {
    this.#started ??= this.#start();
    return this.#started;
  }

  async #start(): Promise<ConnectionConfig> {
    if (this.#closed) throw new Error('SourceWatcher is closed');
    if (this.#watchesFiles) await this.#watch();
    // close() while chokidar was getting ready: it never will be, and there is nothing to read for.
    if (this.#closed) throw new Error('SourceWatcher is closed');
    // The initial read counts as a read in progress: events during it re-read after it.
    const initial = this.#readSnapshot().then((snapshot) => {
      if (!this.#closed) this.#current = snapshot.config;
      return snapshot.config;
    });
    this.#track(initial.then(() => undefined));
    try {
      const config = await initial;
      this.#startResync();
      return config;
    } catch (error) {
      if (!this.#keepWatchingOnStartError || this.#closed) {
        await this.close();
        throw error;
      }
      // Watching on: the next event (or the recovery poll) re-reads, and a valid read is a
      // change from nothing. The same error is not reported twice.
      this.#lastErrorMessage = (error as Error).message;
      this.#startRecoveryPoll((error as SourceError).code);
      this.#startResync();
      throw error;
    }
  }

  /**
   * Reads the source again soon (after `debounceMillis`), as a file event would: for a
   * caller that has reason to think it changed, e.g. a database refused the credentials
   * it holds. A change is emitted as usual; nothing happens if it did not change.
   */
  reread(): void {
    this.#schedule();
  }

  /** False in `'none'` mode, and for sources without files (the libpq environment). */
  get #watchesFiles(): boolean {
    return this.#dirs.size > 0 && this.watchMode !== 'none';
  }

  /**
   * The safety net: a re-read every `resyncIntervalMillis`, through the same path as a file
   * event (so it never overlaps a read, and emits only a new fingerprint or a new error).
   */
  #startResync(): void {
    if (this.resyncIntervalMillis === 0 || this.#closed) return;
    this.#resync = setInterval(() => this.#schedule(), this.resyncIntervalMillis);
    // chokidar keeps the process alive while it watches; the safety net alone does not.
    this.#resync.unref();
  }

  /** Stops watching; no timers or file handles remain. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#stopWaitingForReady?.();
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    clearInterval(this.#resync);
    this.#resync = undefined;
    this.#stopRecoveryPoll();
    await this.#rearming;
    await closeChokidar(this.#watcher);
    this.#watcher = undefined;
    await this.#reading;
    // fs.watch handles finish closing on a later turn of the event loop.
    await new Promise<void>((resolveTurn) => setTimeout(resolveTurn, 0));
    await new Promise<void>((resolveTurn) => setImmediate(resolveTurn));
  }

  /**
   * While the source is invalid, every `RECOVERY_POLL_MILLIS` it is read again, until it
   * reads fine: file events can be lost (see the class comment). While it is `missing`,
   * its parent may be gone too (then chokidar lost its watch and will not see the
   * directory come back): the watch is set up again first.
   */
  #startRecoveryPoll(code: SourceError['code']): void {
    this.#failureCode = code;
    if (this.#recoveryPoll || this.#closed || !this.#watchesFiles) return;
    this.#recoveryPoll = setInterval(() => {
      if (this.#rearming || this.#closed) return;
      if (this.#failureCode !== 'missing') {
        this.#schedule();
        return;
      }
      this.#rearming = this.#rearm().finally(() => {
        this.#rearming = undefined;
      });
    }, RECOVERY_POLL_MILLIS);
    this.#recoveryPoll.unref();
  }

  #stopRecoveryPoll(): void {
    if (this.#recoveryPoll) clearInterval(this.#recoveryPoll);
    this.#recoveryPoll = undefined;
    this.#failureCode = undefined;
  }

  async #rearm(): Promise<void> {
    const old = this.#watcher;
    this.#watcher = undefined;
    await closeChokidar(old);
    if (this.#closed) return;
    await this.#watch();
    if (this.#closed) {
      await closeChokidar(this.#watcher);
      this.#watcher = undefined;
      return;
    }
    this.#schedule();
  }

  #recoveryPoll: NodeJS.Timeout | undefined;
  /** The code of the error the last read ended in, while the recovery poll runs. */
  #failureCode: SourceError['code'] | undefined;
  #rearming: Promise<void> | undefined;

  async #watch(): Promise<void> {
    const dirs = this.#dirs;
    const parents = new Set([...dirs].map((d) => dirname(d)));
    const relevant = (path: string) => parents.has(path) || dirs.has(path) || dirs.has(dirname(path));
    const watcher = watch([...parents], {
      depth: 1,
      ignoreInitial: true,
      followSymlinks: false,
      // no delayed 'unlink' (chokidar's atomic-write collapsing): every event re-reads anyway
      atomic: false,
      ignorePermissionErrors: true,
      persistent: this.#persistent,
      ignored: (path: string) => !relevant(resolve(path)),
      usePolling: this.watchMode === 'polling',
      interval: this.pollIntervalMillis,
      binaryInterval: this.pollIntervalMillis,
    });
    this.#watcher = watcher;
    // Only the raw fs.watch events trigger reads: chokidar's normalized events (add,
    // change, unlink ...) follow the same raw events a few ms later, after its own stat
    // and readdir calls, and would only make reads look disturbed (see #reread). chokidar
    // still does the work that matters: it keeps one fs.watch per directory and re-arms
    // the watch when the directory is deleted and created again.
    // In 'polling' mode the raw events are chokidar's stat comparisons, one per changed path.
    const concerns = (path: string) => dirs.has(path) || dirs.has(dirname(path));
    watcher.on('raw', (_event, name, details) => {
      const paths = rawEventPaths(name, details);
      if (paths.some(concerns) && !paths.some((path) => isTimestampedFolder(path, dirs))) this.#schedule();
    });
    // chokidar reports watch failures here; the next event or re-creation re-arms it.
    watcher.on('error', () => undefined);
    // A chokidar watcher closed before it is ready never emits 'ready': close() ends the wait.
    await new Promise<void>((resolveReady) => {
      this.#stopWaitingForReady = resolveReady;
      watcher.once('ready', () => resolveReady());
    });
    this.#stopWaitingForReady = undefined;
  }

  #stopWaitingForReady: (() => void) | undefined;

  #schedule(): void {
    if (this.#closed || this.#started === undefined) return;
    // Not reset by later events: reads are snapshot-consistent, so there is no need to
    // wait for quiet, and a later event during or after the read causes one more read.
    if (this.#timer) return;
    this.#firstEventAt = Date.now();
    this.#timer = setTimeout(() => this.#fire(), this.debounceMillis);
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    const detectedAt = this.#firstEventAt ?? Date.now();
    this.#firstEventAt = undefined;
    if (this.#reading) {
      // Re-read once the current read is done: it may have read the state before this event.
      this.#pendingDetectedAt ??= detectedAt;
      return;
    }
    this.#track(this.#reread(detectedAt));
  }

  #track(read: Promise<void>): void {
    this.#reading = read
      .catch(() => undefined)
      .finally(() => {
        this.#reading = undefined;
        const pending = this.#pendingDetectedAt;
        this.#pendingDetectedAt = undefined;
        // (a pending timer reads soon anyway)
        if (pending !== undefined && !this.#closed && !this.#timer) this.#track(this.#reread(pending));
      });
  }

  #pendingDetectedAt: number | undefined;

  async #reread(eventAt: number): Promise<void> {
    let snapshot: SourceSnapshot | undefined;
    let failure: SourceError | undefined;
    try {
      snapshot = await this.#readSnapshot();
    } catch (error) {
      failure = error as SourceError;
    }
    if (this.#closed) return;
    const detectedAt = Math.min(eventAt, this.#unsettled?.detectedAt ?? eventAt);

    // Settling: if more file events came in while reading, the directory was still being
    // changed (a non-atomic edit, `rm -r`, a copy in progress) and the result may be a
    // half-way state, such as a directory whose password file is already deleted but
    // whose other files are not. Such a result is emitted only when the next read gives
    // the same result (so steady unrelated activity cannot hold events back); otherwise
    // the read that those events caused decides. A read through `..data` (`atomic`) is a
    // whole published version whatever happened meanwhile: it needs no confirmation, which
    // matters because the kubelet removes the old folder right after the swap, so the
    // read that sees a new secret is nearly always disturbed.
    const outcome = snapshot ? snapshot.config.fingerprint : `error:${failure!.message}`;
    const disturbed = this.#timer !== undefined || this.#pendingDetectedAt !== undefined;
    if (disturbed && snapshot?.atomic !== true && this.#unsettled?.outcome !== outcome) {
      this.#unsettled = { outcome, detectedAt };
      return;
    }
    this.#unsettled = undefined;

    if (failure) this.#startRecoveryPoll(failure.code);
    else this.#stopRecoveryPoll();
    if (failure) {
      if (failure.message === this.#lastErrorMessage) return;
      this.#lastErrorMessage = failure.message;
      this.#reportSourceError(failure);
      // An 'error' event without a listener would throw; an unobserved source error is
      // not worth crashing the process for.
      if (this.listenerCount('error') > 0) this.#emitSafely('error', failure);
      return;
    }
    const config = snapshot!.config;
    this.#lastErrorMessage = undefined;
    const previous = this.#current;
    if (previous?.fingerprint === config.fingerprint) return;
    this.#current = config;
    const change: ChangeEvent = {
      previousFingerprint: previous?.fingerprint,
      config,
      changedAt: snapshot!.changedAt,
      detectedAt,
      emittedAt: Date.now(),
    };
    this.#reportChange(change);
    this.#emitSafely('change', change);
  }

  /** Diagnostics channel and log line of a change: fingerprints and times, never the config. */
  #reportChange(change: ChangeEvent): void {
    const { previousFingerprint, changedAt, detectedAt, emittedAt } = change;
    const fields = {
      source: this.source.description,
      previousFingerprint,
      fingerprint: change.config.fingerprint,
    };
    publishDiagnostic(HOTLOAD_CHANNELS.change, () => ({ ...fields, changedAt, detectedAt, emittedAt }));
    this.#logger.info({ ...fields, detectionMillis: detectedAt - changedAt }, 'hotload: source changed');
  }

  /** Diagnostics channel and log line of a source error (secret-free by construction). */
  #reportSourceError(error: SourceError): void {
    const source = this.source.description;
    publishDiagnostic(HOTLOAD_CHANNELS.sourceError, () => ({ source, error }));
    this.#logger.warn(
      { source, err: loggedError(error) },
      'hotload: source invalid, keeping the last good config',
    );
  }

  #unsettled: { outcome: string; detectedAt: number } | undefined;

  /** A throwing listener must not stop the watcher: its error is rethrown on its own. */
  #emitSafely<K extends keyof SourceWatcherEvents>(event: K, ...args: SourceWatcherEvents[K]): void {
    try {
      (this.emit as (e: K, ...a: SourceWatcherEvents[K]) => boolean)(event, ...args);
    } catch (error) {
      process.nextTick(() => {
        throw error;
      });
    }
  }

  /** Reads through `readSnapshot` when the source has it; only SourceErrors come out. */
  async #readSnapshot(): Promise<SourceSnapshot> {
    try {
      if (this.source.readSnapshot) return await this.source.readSnapshot();
      const config = await this.source.read();
      return { config, changedAt: Date.now() };
    } catch (error) {
      throw isSourceError(error) ? error : relabel(error, this.source.description);
    }
  }
}

/** The watcher's resync (0: off) and the source's own re-read interval: the shorter one that is on. */
function resyncInterval(watcherMillis: number, sourceMillis: number | undefined): number {
  if (sourceMillis === undefined) return watcherMillis;
  return watcherMillis === 0 ? sourceMillis : Math.min(watcherMillis, sourceMillis);
}
