import { EventEmitter } from 'node:events';
import type { ConnectionConfig, HostPort } from '../config.js';
import { createSource } from '../create-source.js';
import type { ConnectionCounts } from '../metrics/hotload-metrics.js';
import { redactError } from '../redact.js';
import { SourceWatcher } from '../source-watcher.js';
import { backoffDelay } from './backoff.js';
import { isCredentialFailure } from './credential-failure.js';
import type { GenerationDriver } from './driver.js';
import type { GenerationTarget, LifecycleEvents } from './events.js';
import { isFailoverSignal } from './failover-signal.js';
import { ForceClosedError } from './force-closed-error.js';
import { isMultiHost, requiresWritable } from './host-selection.js';
import { publishLifecycleDiagnostics } from './lifecycle-diagnostics.js';
import { logLifecycleEvents } from './lifecycle-logging.js';
import { instrumentLifecycle } from './lifecycle-metrics.js';
import type { ObservableLifecycle } from './observable.js';
import { type LifecycleOptions, type ResolvedLifecycleOptions, resolveLifecycleOptions } from './options.js';
import { SwitchAttempt } from './switch-attempt.js';
import { describeTlsFailure } from './tls-verify-error.js';
import { verifyCandidate } from './verify-candidate.js';

/** A generation as the manager keeps it: the driver's handle plus what it was built from. */
interface Managed<Generation> {
  readonly id: number;
  readonly handle: Generation;
  readonly config: ConnectionConfig;
  readonly host: HostPort;
}

/** Timings of a verified switch, for the `switch` event. */
interface SwitchDetails {
  readonly attempts: number;
  readonly verifyMillis: number;
  readonly requestedAt: number;
  readonly changedAt: number | undefined;
}

/**
 * Someone waiting for the next generation to serve: the first one (see
 * {@link GenerationManager.whenServing}), or the one of a new secret after a refused login
 * (see {@link GenerationManager.awaitCredentialChange}).
 */
interface Waiter<Generation> {
  resolve(generation: Generation): void;
  reject(error: Error): void;
}

const noop = (): void => {};

/**
 * The generation lifecycle, once, for every driver: watch the source; on each real change
 * build a candidate generation (on the first suitable host of a host list), verify it
 * with a real connection (retrying with capped, jittered backoff while it fails; the
 * current generation keeps serving), promote exactly what was verified, and drain the
 * previous one, force-closing what is still in use after `drainTimeoutMillis` with a
 * {@link ForceClosedError}. The newest config always wins. With a host list and
 * `target_session_attrs=read-write`, a failover signal on the serving generation
 * re-runs host selection.
 *
 * What a generation *is* belongs to the {@link GenerationDriver}. A source that is
 * missing or invalid at start is still watched: {@link GenerationManager.whenServing}
 * fails fast with its `SourceError` meanwhile, and the first valid config serves. No
 * timer or watch keeps the process alive on its own.
 */
export class GenerationManager<Generation, Client, Connection = Client>
  extends EventEmitter<LifecycleEvents>
  implements ObservableLifecycle
{
  /**
   * The watcher of `options.source`, with `options.watcher`'s settings. Unless those say
   * otherwise it is not persistent (it never keeps the process alive on its own); it always
   * keeps watching after a failed first read.
   */
  readonly sourceWatcher: SourceWatcher;
  /**
   * The name in metric labels, diagnostics messages and log lines: `options.name`, else the
   * source's description.
   */
  readonly name: string;
  readonly #driver: GenerationDriver<Generation, Client, Connection>;
  readonly #options: ResolvedLifecycleOptions;
  readonly #prepare: ((client: Client) => Promise<void>) | undefined;
  readonly #started: Promise<void>;
  #current: Managed<Generation> | undefined;
  readonly #retiring = new Map<Managed<Generation>, Promise<void>>();
  #pending: SwitchAttempt | undefined;
  #reselecting = false;
  #nextId = 1;
  #startError: Error | undefined;
  #waiters: Waiter<Generation>[] = [];
  #closed = false;
  #closing: Promise<void> | undefined;

  /**
   * Validates the options and starts watching. Throws (leaving nothing running) on bad
   * options or a source spec that cannot be built.
   */
  constructor(driver: GenerationDriver<Generation, Client, Connection>, options: LifecycleOptions<Client>) {
    super();
    this.#options = resolveLifecycleOptions(options as LifecycleOptions<never>);
    this.#driver = driver;
    this.#prepare = options.prepare;
    const source = createSource(options.source);
    this.name = options.name ?? source.description;
    // The lifecycle's logger also logs the watcher's changes, unless the watcher has its own.
    this.sourceWatcher = new SourceWatcher(source, {
      ...(options.logger ? { logger: options.logger } : {}),
      // Watching alone never keeps the process alive: a service ends when its work ends.
      persistent: false,
      ...options.watcher,
      keepWatchingOnStartError: true,
    });
    // Before the observers: an initial config is no switch to report (metrics read its
    // generation when they attach). Building opens no connection, so nothing is left running.
    if (options.initialConfig) this.#serveInitial(options.initialConfig);
    // Observers before start, so a throwing one (prom-client missing) leaves no watcher running.
    publishLifecycleDiagnostics(this);
    if (options.metrics) instrumentLifecycle(this, options.metrics === true ? {} : options.metrics);
    if (options.logger) logLifecycleEvents(this, options.logger);
    this.#started = this.#start();
    this.#started.catch(noop); // reported through ready(), whenServing() and 'sourceError'
  }

  /**
   * Resolves once the initial config was read and the first generation serves; rejects
   * with the source's `SourceError` if the initial read failed (the manager keeps
   * watching and serves once the source is valid).
   */
  ready(): Promise<void> {
    return this.#started;
  }

  /** The serving generation's handle, if any (the hot path: no promise). */
  get current(): Generation | undefined {
    return this.#current?.handle;
  }

  /** Id of the serving generation (`undefined` before the first). */
  get generation(): number | undefined {
    return this.#current?.id;
  }

  /** The options it runs with, defaults applied (timings a driver may pace its own retries by). */
  get options(): ResolvedLifecycleOptions {
    return this.#options;
  }

  /** The config the serving generation was built from (prints redacted). */
  get config(): ConnectionConfig | undefined {
    return this.#current?.config;
  }

  /** True once {@link GenerationManager.close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Open connections of the serving generation, and of the retired generations still draining. */
  get connectionCounts(): ConnectionCounts {
    let retiring = 0;
    for (const generation of this.#retiring.keys()) retiring += this.#driver.count(generation.handle);
    return { current: this.#current ? this.#driver.count(this.#current.handle) : 0, retiring };
  }

  /**
   * The serving generation; before the first one, waits for it, or rejects at once with
   * the start's `SourceError` while the source is invalid (fail fast, as a checkout should).
   */
  whenServing(): Promise<Generation> {
    if (this.#current) return Promise.resolve(this.#current.handle);
    if (this.#closed) return Promise.reject(new Error('hotload: closed'));
    if (this.#startError) return Promise.reject(this.#startError);
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  /**
   * Switches to `config` as if the source had changed to it. Resolves `true` once it
   * serves (or already did), `false` if superseded by a newer change or by `close()`.
   */
  switchTo(config: ConnectionConfig): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    return this.#request(config, undefined, false);
  }

  /**
   * A driver reports an error of one of `generation`'s connections. On the serving
   * generation: a refused login re-reads the source at once (the secret may have changed
   * with no file event seen); with a host list and target_session_attrs=read-write, a
   * failover signal (read-only, connection lost) re-runs host selection, one at a time.
   */
  reportError(generation: Generation, error: Error): void {
    const current = this.#current;
    if (this.#closed || current?.handle !== generation) return;
    if (isCredentialFailure(error) || this.#rereadsOnFailure(error)) this.sourceWatcher.reread();
    if (this.#reselecting) return;
    if (!isMultiHost(current.config) || !requiresWritable(current.config) || !isFailoverSignal(error)) return;
    this.#reselect(current.config);
  }

  /** A source that asks for it (SRV discovery) is re-read after a connection failure. */
  #rereadsOnFailure(error: Error): boolean {
    return this.sourceWatcher.source.rereadOnConnectionFailure === true && isFailoverSignal(error);
  }

  /**
   * A new connection of `generation` failed with `error`; resolves with the generation to
   * retry on, or rejects with `error` (fail as the library itself would). A refused login
   * (28P01/28000) of the serving generation may be the password changed in the database
   * a moment before the secret: the source is re-read at once and this resolves with the
   * next generation once it serves, waiting at most `credentialWaitMillis`. A generation
   * replaced meanwhile resolves with the serving one at once; anything else rejects.
   */
  awaitCredentialChange(generation: Generation, error: Error): Promise<Generation> {
    const current = this.#current;
    if (this.#closed || current === undefined) return Promise.reject(error);
    if (current.handle !== generation) return Promise.resolve(current.handle);
    if (this.#rereadsOnFailure(error)) this.sourceWatcher.reread();
    const waitMillis = this.#options.credentialWaitMillis;
    if (!isCredentialFailure(error) || waitMillis === 0) return Promise.reject(error);
    this.sourceWatcher.reread();
    return new Promise((resolve, reject) => {
      // Resolved by the next promotion (as a waiter for the first generation is), or
      // failed with the refused login's error by close() or the deadline.
      const waiter: Waiter<Generation> = {
        resolve: (next) => {
          clearTimeout(deadline);
          resolve(next);
        },
        reject: () => {
          clearTimeout(deadline);
          reject(error);
        },
      };
      const deadline = setTimeout(() => {
        this.#waiters = this.#waiters.filter((other) => other !== waiter);
        reject(error);
      }, waitMillis);
      this.#waiters.push(waiter);
    });
  }

  /**
   * Stops watching, cancels a switch in flight (its candidate is discarded), lets retiring
   * generations finish their drain and drains the serving one (waiting for its holders).
   * Idempotent; settles even when called while starting.
   */
  close(): Promise<void> {
    this.#closed = true;
    this.#closing ??= this.#closeAll();
    return this.#closing;
  }

  async #closeAll(): Promise<void> {
    this.#rejectWaiters(new Error('hotload: closed'));
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.cancel();
    await this.sourceWatcher.close();
    await this.#started.catch(noop);
    await pending?.done;
    const current = this.#current;
    await Promise.all([current && this.#driver.drain(current.handle), ...this.#retiring.values()]);
  }

  async #start(): Promise<void> {
    const watcher = this.sourceWatcher;
    watcher.on('change', (change) => {
      if (!this.#closed) void this.#request(change.config, change.changedAt, false);
    });
    watcher.on('error', (error) => this.emit('sourceError', { error }));
    let config: ConnectionConfig;
    try {
      config = await watcher.start();
    } catch (error) {
      if (this.#closed) return; // close() during start: nothing to report
      this.#startError = error as Error;
      this.#rejectWaiters(this.#startError);
      this.emit('sourceError', { error: error as never });
      throw error;
    }
    if (this.#closed) return;
    if (this.#current === undefined) return this.#serveFirst(config);
    // Serving the initial config (or a switch came first): the source's config wins if it differs.
    if (config.fingerprint !== this.#current.config.fingerprint) void this.#request(config, undefined, false);
  }

  /**
   * The first generation serves as soon as the source is read, unverified, as the
   * library itself would connect. With a host list it goes on the first suitable host
   * (one verify pass, failures reported); if none is, on the first host, and host
   * selection goes on retrying.
   */
  async #serveFirst(config: ConnectionConfig): Promise<void> {
    const requestedAt = Date.now();
    if (isMultiHost(config)) {
      const attempt = new SwitchAttempt(config, false, requestedAt, undefined);
      this.#pending = attempt;
      const selected = await this.#selectOnce(attempt, 1, 0);
      if (this.#pending === attempt) this.#pending = undefined;
      if (attempt.cancelled || this.#closed) return;
      if (selected)
        return this.#promote(selected, { attempts: 1, verifyMillis: 0, requestedAt, changedAt: undefined });
    }
    let first: Managed<Generation>;
    try {
      first = this.#build(config, config.hosts[0]!);
    } catch (error) {
      // e.g. an sslrootcert file not there yet: nothing serves, so checkouts fail fast
      // with this error (as with an invalid source) while it is retried like a failing verify.
      this.#verifyFailed(config, config.hosts[0]!, 0, 1, this.#options.verifyRetryInitialMillis, error);
      this.#startError = error as Error;
      this.#rejectWaiters(this.#startError);
      void this.#request(config, undefined, false);
      throw error;
    }
    this.#promote(first, { attempts: 0, verifyMillis: 0, requestedAt, changedAt: undefined });
    if (isMultiHost(config)) this.#reselect(config);
  }

  /** The `initialConfig` option: served synchronously, on its first host, unverified. */
  #serveInitial(config: ConnectionConfig): void {
    const requestedAt = Date.now();
    this.#promote(this.#build(config, config.hosts[0]!), {
      attempts: 0,
      verifyMillis: 0,
      requestedAt,
      changedAt: undefined,
    });
  }

  #reselect(config: ConnectionConfig): void {
    this.#reselecting = true;
    void this.#request(config, undefined, true).finally(() => {
      this.#reselecting = false;
    });
  }

  #request(config: ConnectionConfig, changedAt: number | undefined, reselect: boolean): Promise<boolean> {
    const pending = this.#pending;
    if (pending !== undefined && pending.config.fingerprint === config.fingerprint) return pending.done;
    pending?.cancel();
    this.#pending = undefined;
    const same = config.fingerprint === this.#current?.config.fingerprint;
    if (same && !(reselect && isMultiHost(config))) return Promise.resolve(true);
    const attempt = new SwitchAttempt(config, same, Date.now(), changedAt);
    this.#pending = attempt;
    attempt.done = this.#run(attempt);
    return attempt.done;
  }

  /** Verify attempts with backoff until one host verifies (then promote) or the attempt is cancelled. */
  async #run(attempt: SwitchAttempt): Promise<boolean> {
    const started = performance.now();
    await this.#jitter(attempt);
    if (attempt.cancelled) return false;
    for (let attempts = 1; ; attempts++) {
      const nextRetryMillis = backoffDelay(
        attempts,
        this.#options.verifyRetryInitialMillis,
        this.#options.verifyRetryMaxMillis,
      );
      const selected = await this.#selectOnce(attempt, attempts, nextRetryMillis);
      if (attempt.cancelled) return false;
      if (selected !== undefined) {
        if (this.#pending === attempt) this.#pending = undefined;
        if (attempt.reselect && sameHost(selected.host, this.#current?.host)) {
          // Re-selection found the serving host still suitable: nothing to move.
          await this.#driver.discard(selected.handle);
          return true;
        }
        const { requestedAt, changedAt } = attempt;
        this.#promote(selected, {
          attempts,
          verifyMillis: performance.now() - started,
          requestedAt,
          changedAt,
        });
        return true;
      }
      await attempt.sleep(nextRetryMillis);
      if (attempt.cancelled) return false;
    }
  }

  /**
   * `verifyJitterMillis`: a random pause before a changed config's first verify, so a fleet
   * sharing one Secret spreads its verify connections. Not for host re-selection (a
   * failover wants the writable host at once) and not before the first generation.
   */
  async #jitter(attempt: SwitchAttempt): Promise<void> {
    const { verifyJitterMillis } = this.#options;
    if (verifyJitterMillis === 0 || attempt.reselect || this.#current === undefined) return;
    await attempt.sleep(Math.random() * verifyJitterMillis);
  }

  /**
   * One pass of host selection: a candidate on each host of the list in turn (the only
   * host, without a list); the first that verifies (and is writable when
   * target_session_attrs asks for it) is returned. Failed candidates are discarded; the
   * pass's last failure is reported as `verifyFailed`.
   */
  async #selectOnce(
    attempt: SwitchAttempt,
    attempts: number,
    nextRetryMillis: number,
  ): Promise<Managed<Generation> | undefined> {
    const { config } = attempt;
    let failed: { host: HostPort; id: number; error: unknown } | undefined;
    for (const host of config.hosts) {
      if (attempt.cancelled) return undefined;
      let candidate: Managed<Generation> | undefined;
      const verify = attempt.verifySignal(this.#options.verifyTimeoutMillis);
      try {
        candidate = this.#build(config, host);
        await verifyCandidate(this.#driver, candidate.handle, host, {
          requireWritable: requiresWritable(config),
          // The first generation of a source is not prepared (it serves unverified when single-host).
          prepare: this.#current === undefined ? undefined : this.#prepare,
          signal: verify.signal,
        });
        if (!attempt.cancelled) return candidate;
      } catch (error) {
        failed = { host, id: candidate?.id ?? 0, error: describeTlsFailure(config, host, error) };
      } finally {
        verify.dispose();
      }
      if (candidate) await this.#driver.discard(candidate.handle);
    }
    if (failed && !attempt.cancelled) {
      this.#verifyFailed(config, failed.host, failed.id, attempts, nextRetryMillis, failed.error);
    }
    return undefined;
  }

  #build(config: ConnectionConfig, host: HostPort): Managed<Generation> {
    const id = this.#nextId++;
    return { id, handle: this.#driver.build(config, host, id), config, host };
  }

  #verifyFailed(
    config: ConnectionConfig,
    host: HostPort,
    generation: number,
    attempt: number,
    nextRetryMillis: number,
    error: unknown,
  ): void {
    this.emit('verifyFailed', {
      ...targetOf(config, host),
      generation,
      attempt,
      nextRetryMillis,
      error: redactError(error, [config.password]),
    });
  }

  /** Moves new work to `candidate`, then drains the previous generation. */
  #promote(candidate: Managed<Generation>, details: SwitchDetails): void {
    const previous = this.#current;
    this.#current = candidate;
    this.#startError = undefined;
    this.#driver.promote(candidate.handle, previous?.handle);
    this.emit('switch', {
      ...targetOf(candidate.config, candidate.host),
      fromGeneration: previous?.id,
      toGeneration: candidate.id,
      fingerprint: candidate.config.fingerprint,
      ...details,
      switchedAt: Date.now(),
    });
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter.resolve(candidate.handle);
    if (previous !== undefined) this.#retire(previous);
  }

  /** Drains a retired generation; what is still in use at the deadline is force-closed. */
  #retire(generation: Managed<Generation>): void {
    const started = performance.now();
    const { drainTimeoutMillis } = this.#options;
    let forced = false;
    const deadline = setTimeout(() => {
      const connections = this.#driver.inUse(generation.handle);
      if (connections.length === 0) return;
      forced = true;
      const error = new ForceClosedError(generation.id, drainTimeoutMillis);
      for (const connection of connections) this.#driver.forceClose(generation.handle, connection, error);
      this.emit('forceClosed', {
        generation: generation.id,
        connections: connections.length,
        drainTimeoutMillis,
      });
    }, drainTimeoutMillis);
    // A pending drain deadline must not keep the process alive on its own.
    deadline.unref();
    const drained = this.#driver.drain(generation.handle).then(() => {
      clearTimeout(deadline);
      this.#retiring.delete(generation);
      this.emit('drained', { generation: generation.id, drainMillis: performance.now() - started, forced });
    });
    this.#retiring.set(generation, drained);
  }

  #rejectWaiters(error: Error): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter.reject(error);
  }
}

function sameHost(a: HostPort, b: HostPort | undefined): boolean {
  return b !== undefined && a.host === b.host && a.port === b.port;
}

/** The non-secret coordinates of a generation, for events. */
function targetOf(config: ConnectionConfig, host: HostPort): GenerationTarget {
  return { host: host.host, port: host.port, database: config.database, user: config.user };
}
