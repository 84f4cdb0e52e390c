import {
  type ConnectionCounts,
  createSource,
  type SourceWatcher,
  SourceWatcher as Watcher,
} from 'hotload-core';
import pg from 'pg';
import { backoffDelay } from './backoff.js';
import {
  FORWARDED_EVENTS,
  type ForwardedEvent,
  type PgPoolEvent,
  type PgPoolListener,
  type PoolEvents,
} from './events.js';
import { type CheckoutCallback, Generation, type GenerationHooks } from './generation.js';
import { GenerationSwitch, type SwitchTarget, type VerifiedSwitch } from './generation-switch.js';
import {
  type HotloadOptions,
  type PoolConfig,
  type ResolvedSwitchOptions,
  resolveSwitchOptions,
} from './options.js';
import {
  type ConnectionSettings,
  type HostPort,
  isMultiHost,
  requiresWritable,
  toPgPoolConfig,
} from './pg-pool-config.js';
import { publishPoolDiagnostics } from './pool-diagnostics.js';
import { logPoolEvents } from './pool-logging.js';
import { instrumentPool } from './pool-metrics.js';
import { type NodeCallback, promisify } from './promisify.js';

/**
 * A checkout the pool itself holds: waiting for capacity or for the first config, or
 * handed to a generation from that queue. Its `connectionTimeoutMillis` timer runs from
 * the checkout call until it is answered (as pg-pool's queue timer does), wherever it is.
 */
interface Waiter {
  readonly callback: CheckoutCallback;
  timer: NodeJS.Timeout | undefined;
  /** In the pool's queue (so answering it must take it out). */
  queued: boolean;
  /** Answered (served, failed or timed out): a late client goes straight back. */
  settled: boolean;
  /**
   * Asked while there was no generation yet and within `max`: pg.Pool would be opening a
   * connection for it, so its timeout is pg's connection timeout, not the queue's.
   */
  readonly connecting: boolean;
  /** Fails it with the refused login's error once `credentialWaitMillis` ran out. */
  credentialTimer: NodeJS.Timeout | undefined;
}

/** pg-pool's error for a checkout not served within `connectionTimeoutMillis`. */
const CONNECT_TIMEOUT_MESSAGE = 'timeout exceeded when trying to connect';
/** pg-pool's error for a new connection not made within `connectionTimeoutMillis`. */
const CONNECTION_TIMEOUT_MESSAGE = 'Connection terminated due to connection timeout';
/** pg-pool's error for work asked after `end()`. */
const ENDED_MESSAGE = 'Cannot use a pool after calling end on the pool';

const noop = (): void => {};

/** The release function a checkout callback receives. */
type PgRelease = (err?: Error | boolean) => void;

/** Where the `options` setter keeps the options pg-pool's constructor computed. */
const baseOptions = Symbol('hotload-pg.baseOptions');

/**
 * A drop-in `pg.Pool` that follows a connection source.
 *
 * It serves from one *generation* (a real `pg.Pool` built from one config). When the
 * source changes, a new generation is verified with a real connection, new checkouts move
 * to it at once, and the old one drains: idle clients close immediately, checked-out
 * clients close when released, and whatever is still checked out after
 * `drainTimeoutMillis` is force-closed with a {@link ForceClosedError}.
 *
 * Checkouts never queue inside a generation: the pool keeps its own wait queue and asks a
 * generation for at most `max` clients, so waiters at switch time are served by the new
 * generation. Without `hotload.source` it is a single generation built from the pg options,
 * i.e. plain `pg.Pool` behaviour (plus {@link Pool.switchTo}).
 */
export class Pool extends pg.Pool {
  readonly #config: pg.PoolConfig;
  readonly #switchOptions: ResolvedSwitchOptions;
  readonly #switch: GenerationSwitch;
  /** Every generation not yet closed: current, retiring and candidates being verified. */
  readonly #generations = new Set<Generation>();
  readonly #forwarded = new Set<ForwardedEvent>();
  readonly #waiters: Waiter[] = [];
  #current: Generation | undefined;
  declare [baseOptions]: pg.PoolConfig;
  #nextId = 1;
  #watcher: SourceWatcher | undefined;
  /** Settles with the first outcome of the source: a first generation, or why there is none. */
  #started: Promise<void>;
  /** Why there is no generation to serve (invalid source, unbuildable config); cleared by one. */
  #unavailable: Error | undefined;
  /** Building the first generation (async with host lists); changes meanwhile wait in #pendingFirst. */
  #startingFirst = false;
  #pendingFirst: ConnectionSettings | undefined;
  /** True once `end()` was called (pg.Pool's field; set by pg-pool's constructor, then by `end()`). */
  declare ending: boolean;
  /** True once `end()` has closed every generation (pg.Pool's field). */
  declare ended: boolean;
  #ending: Promise<void> | undefined;
  readonly #name: string | undefined;
  /** Settings each source-built generation came from (failover re-selection needs them). */
  readonly #settingsOf = new WeakMap<Generation, ConnectionSettings>();
  /** A failover re-selection is in flight: further errors add nothing (debounce). */
  #reselecting = false;

  /** Same options as `pg.Pool`, plus `hotload` (see {@link HotloadOptions}). */
  constructor(config?: PoolConfig) {
    const { hotload, ...pgConfig } = config ?? {};
    // pg-pool's constructor only records options (defaults applied, password hidden) and
    // empty queues; it opens nothing. Its queues stay unused: generations do the pooling.
    super(pgConfig);
    this.#config = pgConfig;
    this.#switchOptions = resolveSwitchOptions(hotload);
    this.#switch = new GenerationSwitch(this.#switchTarget(), this.#switchOptions);
    super.on('newListener' as 'error', this.#forwardOnDemand as never);
    this.#name = hotload?.name;
    const source = hotload?.source === undefined ? undefined : createSource(hotload.source);
    // The watcher exists (not yet watching) for the observers to subscribe to; anything
    // that can throw here (metrics without prom-client) runs before it watches, so a
    // constructor that throws leaves nothing running.
    if (source !== undefined) {
      // Kept watching when the first read fails (the pool serves once the source is
      // valid); never keeping the process alive (pg.Pool would not).
      const watcherOptions = { ...hotload?.watcher, keepWatchingOnStartError: true, persistent: false };
      this.#watcher = new Watcher(source, watcherOptions);
    }
    this.#observe(hotload);
    if (this.#watcher === undefined) {
      this.#current = this.#newGeneration(undefined, pgConfig);
      this.#started = Promise.resolve();
    } else {
      this.#started = this.#start(this.#watcher);
      this.#started.catch(noop); // reported through ready(), checkouts and 'sourceError'
    }
  }

  /** Diagnostics always (free without subscribers); metrics and logs when asked for. */
  #observe(hotload: HotloadOptions | undefined): void {
    publishPoolDiagnostics(this);
    if (hotload?.metrics) instrumentPool(this, hotload.metrics === true ? {} : hotload.metrics);
    if (hotload?.logger) logPoolEvents(this, hotload.logger);
  }

  /** `hotload.name`: this pool's name in metrics, diagnostics and logs (undefined if not given). */
  get hotloadName(): string | undefined {
    return this.#name;
  }

  /** The watcher of `hotload.source` (undefined without a source), e.g. to observe its `change` events. */
  get sourceWatcher(): SourceWatcher | undefined {
    return this.#watcher;
  }

  /** Open clients of the serving generation, and of all others (retiring, or being verified). */
  get connectionCounts(): ConnectionCounts {
    const total = this.totalCount;
    const current = this.#current?.pool.totalCount ?? 0;
    return { current, retiring: total - current };
  }

  /**
   * Creates a pool and waits until its source has been read (see {@link Pool.ready}).
   * Rejects with the source's `SourceError` if there is no valid config (the pool is
   * ended then): for programs that would rather fail at start-up than wait for one.
   */
  static async create(config?: PoolConfig): Promise<Pool> {
    const pool = new this(config);
    try {
      await pool.ready();
    } catch (error) {
      await pool.end(); // the caller never gets it: stop its watcher
      throw error;
    }
    return pool;
  }

  /**
   * Resolves once the initial config has been read and the first generation exists.
   * Checkouts made before then wait for it. While there is no valid config (the source is
   * missing or invalid, or names a TLS file that is not there) this rejects, and
   * checkouts fail at once, with the `SourceError`; the source is still watched and the
   * pool serves as soon as it is valid (a later `ready()` then resolves).
   */
  ready(): Promise<void> {
    if (this.#current !== undefined) return Promise.resolve();
    if (this.#unavailable !== undefined) return Promise.reject(this.#unavailable);
    return this.#started;
  }

  /**
   * Switches to `settings` as if the source had changed to them: verify (retrying with
   * backoff while they fail), switch, drain. Resolves `true` once the pool serves on them,
   * `false` if superseded by a newer change or by `end()`.
   */
  switchTo(settings: ConnectionSettings): Promise<boolean> {
    if (this.ending) return Promise.resolve(false);
    return this.#switch.request(settings);
  }

  /** Id of the generation serving new checkouts (`undefined` until the source was read). */
  get generation(): number | undefined {
    return this.#current?.id;
  }

  /** Ids of generations still open besides the current one (retiring or being verified). */
  get otherGenerations(): number[] {
    return [...this.#generations].filter((generation) => generation !== this.#current).map((g) => g.id);
  }

  /** Clients of every generation (connecting, idle and checked out). */
  declare readonly totalCount: number;
  /** Idle clients of every generation. */
  declare readonly idleCount: number;
  /** Checkouts waiting for a client. */
  declare readonly waitingCount: number;
  /** Clients past `maxLifetimeSeconds`, in every generation. */
  declare readonly expiredCount: number;

  /** pg.Pool's events, typed as strictly as pg's typings do, plus hotload's (see {@link PoolEvents}). */
  override on<K extends keyof PoolEvents>(event: K, listener: (...args: PoolEvents[K]) => void): this;
  override on<K extends PgPoolEvent>(event: K, listener: PgPoolListener<K>): this;
  override on(event: keyof PoolEvents, listener: (...args: never[]) => void): this {
    return super.on(event as 'error', listener as never);
  }

  /** As {@link on}, for one event. */
  override once<K extends keyof PoolEvents>(event: K, listener: (...args: PoolEvents[K]) => void): this;
  override once<K extends PgPoolEvent>(event: K, listener: PgPoolListener<K>): this;
  override once(event: keyof PoolEvents, listener: (...args: never[]) => void): this {
    return super.once(event, listener as (...args: unknown[]) => void);
  }

  static {
    // The public query/connect/end keep pg.Pool's overloaded types (inherited); their
    // bodies live here so they can reach the private fields. Through `this`: naming the
    // class inside its body makes esbuild rename it `_Pool`, which is how it would print.
    // biome-ignore lint/complexity/noThisInStatic: see above
    const prototype: Pool = this.prototype;
    prototype.query = function query(this: Pool, text: unknown, values?: unknown, cb?: unknown) {
      return this.#query(text, values, cb);
    } as pg.Pool['query'];
    prototype.connect = function connect(this: Pool, cb?: CheckoutCallback) {
      return this.#connect(cb);
    } as pg.Pool['connect'];
    prototype.end = function end(this: Pool, cb?: (err?: Error) => void) {
      return this.#end(cb);
    } as pg.Pool['end'];
    // pg.Pool types the counts as properties; pg-pool (and this class) makes them getters.
    defineGetters(prototype, {
      totalCount: (pool: Pool) => pool.#connectingFirst() + pool.#sum((generation) => generation.totalCount),
      idleCount: (pool: Pool) => pool.#sum((generation) => generation.idleCount),
      waitingCount: (pool: Pool) =>
        pool.#waiters.length - pool.#connectingFirst() + pool.#sum((generation) => generation.waitingCount),
      expiredCount: (pool: Pool) => pool.#sum((generation) => generation.expiredCount),
    });
    // `options`: pg-pool's options of the current generation (connection fields come from
    // the source). pg-pool's constructor writes (and completes) the base options through
    // the setter before this class's fields exist, hence the brand check in the getter.
    Object.defineProperty(prototype, 'options', {
      configurable: true,
      get(this: Pool): pg.PoolConfig {
        return (#current in this ? this.#current?.pool.options : undefined) ?? this[baseOptions];
      },
      set(this: Pool, value: pg.PoolConfig) {
        Object.defineProperty(this, baseOptions, { configurable: true, writable: true, value });
      },
    });
  }

  /**
   * Checkouts waiting for the first config, up to `max`: pg.Pool would be connecting a
   * client for each already, and counts them in `totalCount` (not `waitingCount`).
   */
  #connectingFirst(): number {
    if (this.#current !== undefined || this.#waiters.length === 0) return 0;
    return Math.min(this.#waiters.length, this.options.max);
  }

  #connect(cb: CheckoutCallback | undefined): Promise<pg.PoolClient> | undefined {
    if (this.ending) {
      const err = new Error(ENDED_MESSAGE);
      // pg-pool calls back with the error alone here.
      if (cb) return void (cb as (err: Error) => void)(err);
      return Promise.reject(err);
    }
    const response = promisify<pg.PoolClient>(cb);
    this.#checkout(response.callback as CheckoutCallback);
    return response.result;
  }

  #query(text: unknown, values: unknown, cb: unknown): unknown {
    if (typeof text === 'function') {
      const response = promisify(text as NodeCallback<never>);
      setImmediate(() =>
        response.callback(
          new Error('Passing a function as the first parameter to pool.query is not supported'),
        ),
      );
      return response.result;
    }
    if (typeof values === 'function') {
      cb = values;
      values = undefined;
    }
    if (isSubmittable(text)) return this.#querySubmittable(text, cb as QueryCallback | undefined);
    const response = promisify<pg.QueryResult>(cb as QueryCallback | undefined);
    const done = response.callback;
    this.#checkout((err, client) => {
      if (err !== undefined || client === undefined) return done(err);
      // As pg-pool does: a client error while the query runs ends it and drops the client.
      let released = false;
      const onError = (clientError: Error): void => {
        if (released) return;
        released = true;
        client.release(clientError);
        done(clientError);
      };
      client.once('error', onError);
      try {
        client.query(
          text as string,
          values as unknown[],
          (queryError: Error | null, result: pg.QueryResult) => {
            client.removeListener('error', onError);
            if (released) return;
            released = true;
            client.release(queryError as Error); // as is (null too): pg-pool emits it in `release`
            if (queryError) return done(queryError);
            done(undefined, result);
          },
        );
      } catch (thrown) {
        client.release(thrown as Error);
        done(thrown as Error);
      }
    });
    return response.result;
  }

  /**
   * `pool.query(submittable)` (pg-cursor, pg-query-stream, ...): returns the submittable
   * at once (as pg's types declare) and gives the client back when it ends: on its
   * callback (query streams) or its `end` event (cursors, also after `close()`).
   */
  #querySubmittable(submittable: SubmittableLike, cb: QueryCallback | undefined): SubmittableLike {
    this.#checkout((err, client) => {
      if (err !== undefined || client === undefined) {
        const error = err ?? new Error('hotload-pg: checkout returned no client');
        submittable.handleError?.(error);
        return cb?.(error);
      }
      let released = false;
      const release = (releaseError?: Error): void => {
        if (released) return;
        released = true;
        client.release(releaseError);
      };
      if (typeof submittable.once === 'function') submittable.once('end', () => release());
      (client.query as LooseQuery).call(client, submittable, (queryError: Error | null, result: unknown) => {
        release(queryError ?? undefined);
        cb?.(queryError ?? undefined, result);
      });
    });
    return submittable;
  }

  #end(cb: ((err?: Error) => void) | undefined): Promise<void> | undefined {
    if (this.ending) {
      // pg-pool's answer to a second end(), word for word.
      const err = new Error('Called end on pool more than once');
      if (cb === undefined) return Promise.reject(err);
      cb(err);
      return undefined;
    }
    this.ending = true;
    this.#ending = this.#closeAll();
    if (cb === undefined) return this.#ending;
    this.#ending.then(() => cb(), cb);
    return undefined;
  }

  async #closeAll(): Promise<void> {
    await this.#switch.cancel();
    // Work asked before end() is served, as pg.Pool serves it: once the first config is
    // there (if it is still being read), by the generation then serving.
    if (this.#current === undefined && this.#unavailable === undefined) await this.#started.catch(noop);
    this.#serveWaiters();
    this.#failWaiters(this.#unavailable ?? new Error(ENDED_MESSAGE));
    await this.#watcher?.close();
    // Retiring generations keep their drain timeout; the current one waits for its
    // holders, as pg.Pool's end() does; a superseded candidate still verifying (its
    // switch no longer pending) is closed at once, or a connect it waits on would hold end().
    await Promise.all(
      [...this.#generations].map((generation) =>
        generation === this.#current ? generation.close() : generation.close(0),
      ),
    );
    this.ended = true;
  }

  /**
   * Hot path: straight to the current generation when it has room and nobody waits (its
   * own pg-pool applies `connectionTimeoutMillis` to the new connection, if one is needed).
   */
  #checkout(callback: CheckoutCallback): void {
    const current = this.#current;
    if (current !== undefined && this.#waiters.length === 0 && current.hasCapacity() && !this.ending) {
      current.checkout(callback);
      return;
    }
    const error = this.ending
      ? new Error(ENDED_MESSAGE)
      : current === undefined
        ? this.#unavailable
        : undefined;
    if (error !== undefined) {
      process.nextTick(() => callback(error, undefined, noop));
      return;
    }
    const connecting = current === undefined && this.#waiters.length < this.options.max;
    this.#queue(this.#newWaiter(callback, connecting));
  }

  #queue(waiter: Waiter, first = false): void {
    waiter.queued = true;
    if (first) this.#waiters.unshift(waiter);
    else this.#waiters.push(waiter);
  }

  #newWaiter(callback: CheckoutCallback, connecting = false): Waiter {
    const waiter: Waiter = {
      callback,
      connecting,
      queued: false,
      timer: undefined,
      settled: false,
      credentialTimer: undefined,
    };
    const timeout = this.#config.connectionTimeoutMillis;
    if (timeout) {
      const message = connecting ? CONNECTION_TIMEOUT_MESSAGE : CONNECT_TIMEOUT_MESSAGE;
      // pg-pool calls a timed-out queued checkout back with the error alone, a failed
      // connection with (err, undefined, noop).
      const arity = connecting ? 3 : 1;
      waiter.timer = setTimeout(
        () => this.#settle(waiter, new Error(message), undefined, noop, arity),
        timeout,
      );
      waiter.timer.unref();
    }
    return waiter;
  }

  /**
   * Answers a waiter once (dropping it from the queue if it is there). `arity` 1: the
   * callback gets the error alone, as pg-pool calls back a timed-out checkout.
   */
  #settle(
    waiter: Waiter,
    err: Error | undefined,
    client?: pg.PoolClient,
    release: PgRelease = noop,
    arity = 3,
  ): void {
    if (waiter.settled) {
      if (client !== undefined) release(); // answered already (timed out): give it back
      return;
    }
    waiter.settled = true;
    clearTimeout(waiter.timer);
    clearTimeout(waiter.credentialTimer);
    if (waiter.queued) {
      waiter.queued = false;
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
    }
    if (arity === 1) (waiter.callback as (err: Error | undefined) => void)(err);
    else waiter.callback(err, client, release);
  }

  /** Hands waiting checkouts to the current generation while it has room. */
  #serveWaiters(): void {
    const current = this.#current;
    if (current === undefined) return;
    while (this.#waiters.length > 0 && current.hasCapacity()) {
      const waiter = this.#waiters.shift()!;
      waiter.queued = false;
      // The waiter goes along as context: a failed connect may queue it again, timer running.
      current.checkout((err, client, release) => this.#settle(waiter, err, client, release), false, waiter);
    }
  }

  #failWaiters(error: Error): void {
    for (const waiter of this.#waiters.splice(0)) {
      waiter.queued = false;
      process.nextTick(() => this.#settle(waiter, error));
    }
  }

  readonly #generationHooks: GenerationHooks = {
    onCheckin: () => {
      if (this.#waiters.length > 0) this.#serveWaiters();
    },
    onClosed: (generation) => {
      this.#generations.delete(generation);
    },
    onConnectFailed: (generation, err, callback, context) =>
      this.#requeueAfterConnectFailure(generation, err, callback, context as Waiter | undefined),
    onError: (generation, err) => {
      if (generation === this.#current && !this.#reselecting && isFailoverSignal(err)) {
        const settings = this.#settingsOf.get(generation);
        if (settings !== undefined && isMultiHost(settings) && requiresWritable(settings)) {
          this.#reselect(settings);
        }
      }
    },
  };

  /**
   * Host lists: runs host selection again for the serving settings (the primary may have
   * moved), through the normal verify/switch/drain path. One at a time; a burst of errors
   * while it runs triggers nothing more.
   */
  #reselect(settings: ConnectionSettings): void {
    if (this.ending) return;
    this.#reselecting = true;
    void this.#switch.request(settings, undefined, true).finally(() => {
      this.#reselecting = false;
    });
  }

  /**
   * A new connection failed. The request fails too, as with pg.Pool, unless someone else
   * can serve it: a newer generation (the failing one is retired), or, for a credential
   * failure (28P01/28000) of the serving generation of a pool with a source while that
   * generation still has clients, those clients as they are released or the generation
   * of the new secret. That is the password changed in the database a moment before the
   * secret: the source is re-read at once, the request waits at the head of the queue
   * for at most `credentialWaitMillis` (and `connectionTimeoutMillis` from its start), and
   * the generation tries one new connection at a time with backoff meanwhile.
   */
  #requeueAfterConnectFailure(
    generation: Generation,
    err: Error,
    callback: CheckoutCallback,
    queuedBefore: Waiter | undefined,
  ): boolean {
    if (this.ending) return false;
    const serving = generation === this.#current;
    if (serving && (this.#watcher === undefined || !isCredentialFailure(err) || generation.live === 0)) {
      return false;
    }
    // A checkout that went straight to the generation gets its clock now: its own connect
    // was bounded by connectionTimeoutMillis already (no time is read on that hot path).
    const waiter = queuedBefore ?? this.#newWaiter(callback);
    if (serving) {
      if (waiter.credentialTimer === undefined) {
        waiter.credentialTimer = setTimeout(
          () => this.#settle(waiter, err),
          this.#switchOptions.credentialWaitMillis,
        );
        waiter.credentialTimer.unref();
      }
      this.#watcher?.reread();
      this.#pauseAfterCredentialFailure(generation);
    }
    if (waiter.settled) return true; // timed out meanwhile: answered already
    this.#queue(waiter, true);
    return true;
  }

  /** Credential failures in a row on the serving generation: the growth pause backs off. */
  #credentialFailures = 0;

  #pauseAfterCredentialFailure(generation: Generation): void {
    if (!generation.growthPaused) this.#credentialFailures++;
    const { verifyRetryInitialMillis, verifyRetryMaxMillis } = this.#switchOptions;
    generation.pauseGrowth(
      backoffDelay(this.#credentialFailures, verifyRetryInitialMillis, verifyRetryMaxMillis),
    );
  }

  async #start(watcher: SourceWatcher): Promise<void> {
    watcher.on('change', (change) => this.#onChange(change.config, change.changedAt));
    watcher.on('error', (error) => this.emit('sourceError', { error }));
    let settings: ConnectionSettings;
    try {
      settings = await watcher.start();
    } catch (error) {
      this.#becomeUnavailable(error as Error);
      throw error;
    }
    await this.#startOn(settings);
  }

  /** No config to serve: waiting and later checkouts fail with `error` until one comes. */
  #becomeUnavailable(error: Error): void {
    this.#unavailable = error;
    this.#failWaiters(error);
    this.emit('sourceError', { error });
  }

  /** A valid source change: the first generation if there is none yet, else a switch. */
  #onChange(settings: ConnectionSettings, changedAt: number): void {
    if (this.ending) return;
    if (this.#startingFirst) this.#pendingFirst = settings;
    else if (this.#current === undefined) this.#startOn(settings).catch(noop);
    else void this.#switch.request(settings, changedAt);
  }

  /** Builds the first generation (rejecting with a SourceError if it cannot be built). */
  async #startOn(settings: ConnectionSettings): Promise<void> {
    this.#startingFirst = true;
    try {
      await this.#startFirstGeneration(settings);
    } catch (error) {
      this.#becomeUnavailable(error as Error);
      throw error;
    } finally {
      this.#startingFirst = false;
      const pending = this.#pendingFirst;
      this.#pendingFirst = undefined;
      if (pending !== undefined) this.#onChange(pending, Date.now());
    }
  }

  async #startFirstGeneration(settings: ConnectionSettings): Promise<void> {
    // After end(), only for the work asked before it (see #closeAll).
    if (this.#current !== undefined || (this.ending && this.#waiters.length === 0)) return;
    if (isMultiHost(settings)) {
      // Host list: the first generation goes on the first suitable host (one pass). If
      // none is, it goes on the first host, as pg would, and selection keeps retrying.
      const selected = await this.#switch.selectOnce(settings);
      if (this.#current !== undefined || (this.ending && this.#waiters.length === 0)) {
        await selected?.close(0);
        return;
      }
      const details = { attempts: 1, verifyMillis: 0, requestedAt: Date.now(), changedAt: undefined };
      if (selected !== undefined) return this.#promote(selected, details);
      this.#promote(this.#createGeneration(settings), { ...details, attempts: 0 });
      this.#reselect(settings);
      return;
    }
    this.#promote(this.#createGeneration(settings), {
      attempts: 0,
      verifyMillis: 0,
      requestedAt: Date.now(),
      changedAt: undefined,
    });
  }

  #newGeneration(fingerprint: string | undefined, config: pg.PoolConfig): Generation {
    const generation = new Generation(this.#nextId++, fingerprint, config, this.#generationHooks);
    this.#generations.add(generation);
    for (const event of FORWARDED_EVENTS) {
      if (event === 'error' || this.#forwarded.has(event)) this.#forward(generation, event);
    }
    return generation;
  }

  /** Forwards a pg-pool event of one generation; 'error' always (pg-pool must not throw it unheard). */
  #forward(generation: Generation, event: ForwardedEvent): void {
    generation.pool.on(event, (...args: unknown[]) => {
      // A socket error that races a closed generation's last goodbye concerns nobody.
      if (event === 'error' && generation.closed) return;
      this.emit(event, ...args);
    });
  }

  /** Forwards connect/acquire/release/remove only once someone listens: nothing per query otherwise. */
  readonly #forwardOnDemand = (event: string | symbol): void => {
    const name = event as ForwardedEvent;
    if (name === 'error' || !FORWARDED_EVENTS.includes(name) || this.#forwarded.has(name)) return;
    this.#forwarded.add(name);
    for (const generation of this.#generations) this.#forward(generation, name);
  };

  #sum(count: (pool: pg.Pool) => number): number {
    let total = 0;
    for (const generation of this.#generations) total += count(generation.pool);
    return total;
  }

  /** What the GenerationSwitch may do to this pool (kept off the public surface). */
  #switchTarget(): SwitchTarget {
    return {
      currentFingerprint: () => this.#current?.fingerprint,
      createGeneration: (settings, host) => this.#createGeneration(settings, host),
      currentHost: () => {
        const options = this.#current?.pool.options;
        if (options?.host === undefined) return undefined;
        return { host: options.host, port: Number(options.port) };
      },
      promote: (candidate, details) => this.#promote(candidate, details),
      verifyFailed: (event) => this.emit('verifyFailed', event),
    };
  }

  #createGeneration(settings: ConnectionSettings, host?: HostPort): Generation {
    const generation = this.#newGeneration(
      settings.fingerprint,
      toPgPoolConfig(this.#config, settings, host),
    );
    this.#settingsOf.set(generation, settings);
    return generation;
  }

  /** Moves new checkouts (and waiters) to `candidate`, then drains the previous generation. */
  #promote(candidate: Generation, details: VerifiedSwitch): void {
    const previous = this.#current;
    this.#current = candidate;
    this.#unavailable = undefined;
    this.#credentialFailures = 0;
    this.emit('switch', {
      fromGeneration: previous?.id,
      toGeneration: candidate.id,
      fingerprint: candidate.fingerprint,
      attempts: details.attempts,
      verifyMillis: details.verifyMillis,
      changedAt: details.changedAt,
      requestedAt: details.requestedAt,
      switchedAt: Date.now(),
    });
    this.#serveWaiters();
    if (previous !== undefined) this.#retire(previous);
  }

  #retire(generation: Generation): void {
    const { drainTimeoutMillis } = this.#switchOptions;
    const onForceClosed = (clients: number): void => {
      this.emit('forceClosed', { generation: generation.id, clients, drainTimeoutMillis });
    };
    void generation.close(drainTimeoutMillis, onForceClosed).then((closed) => {
      this.emit('drained', {
        generation: generation.id,
        drainMillis: closed.closeMillis,
        forced: closed.forceClosed > 0,
      });
    });
  }
}

/** Defines read-only getters on `prototype`, each computed from the instance. */
function defineGetters<T>(prototype: T, getters: Record<string, (instance: T) => number>): void {
  for (const [name, get] of Object.entries(getters)) {
    Object.defineProperty(prototype, name, {
      configurable: true,
      get(this: T) {
        return get(this);
      },
    });
  }
}

/** The server refused the credentials: `invalid_password` or `invalid_authorization_specification`. */
function isCredentialFailure(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  return code === '28P01' || code === '28000';
}

/**
 * Errors that may mean the primary moved: the server is read-only (`25006`), the
 * connection failed or was dropped (SQLSTATE classes 08 and 57P, socket errors, pg's
 * "Connection terminated"). Query errors (syntax, constraints, ...) are not.
 */
function isFailoverSignal(err: Error): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (code === '25006' || code.startsWith('08') || code.startsWith('57P')) return true;
    if (/^E[A-Z]+$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT, ...
    return false;
  }
  return /Connection terminated|connection timeout|timeout expired/i.test(err.message);
}

/** pg's Client#query without its overloads, for the submittable-with-callback form its types omit. */
type LooseQuery = (
  this: pg.PoolClient,
  query: unknown,
  callback: (err: Error | null, result: unknown) => void,
) => unknown;

type QueryCallback = (err: Error | undefined, result?: unknown) => void;

interface SubmittableLike {
  submit: (...args: never[]) => unknown;
  handleError?: (err: Error) => void;
  once?: (event: string, listener: () => void) => unknown;
}

function isSubmittable(value: unknown): value is SubmittableLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { submit?: unknown }).submit === 'function'
  );
}
