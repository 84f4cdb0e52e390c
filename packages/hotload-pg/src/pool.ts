import {
  backoffDelay,
  type ConnectionConfig,
  type ConnectionCounts,
  GenerationManager,
  type HostPort,
  isCredentialFailure,
  type LifecycleOptions,
  type ObservableLifecycle,
  type SourceWatcher,
} from 'hotload-core';
import pg from 'pg';
import { CheckoutQueue, type Waiter } from './checkout-queue.js';
import {
  FORWARDED_EVENTS,
  type ForwardedEvent,
  LIFECYCLE_EVENTS,
  type PgPoolEvent,
  type PgPoolListener,
  type PoolEvents,
} from './events.js';
import type { CheckoutCallback, Generation, GenerationHooks } from './generation.js';
import { copyPoolConfig, type PoolConfig } from './options.js';
import { PgOptionsSource, STATIC_SOURCE_NAME } from './pg-options-source.js';
import { toPgPoolConfig } from './pg-pool-config.js';
import { PgPoolDriver } from './pg-pool-driver.js';
import { clientsOf, idleItemsOf, type PgPoolPendingItem, pendingItemsOf } from './pg-pool-lists.js';
import { type NodeCallback, promisify, rejectedWith } from './promisify.js';

/** pg-pool's error for work asked after `end()`. */
const ENDED_MESSAGE = 'Cannot use a pool after calling end on the pool';

const noop = (): void => {};

/** Set by the class's static block, which may read its private fields. */
let lifecycleOfPool: (pool: Pool) => ObservableLifecycle;

/** Where the `options` setter keeps the options pg-pool's constructor computed. */
const baseOptions = Symbol('hotload-pg.baseOptions');

/**
 * A drop-in `pg.Pool` that follows a connection source.
 *
 * It serves from one *generation* (a real `pg.Pool` built from one config), and is a
 * driver of hotload-core's `GenerationManager` (`PgPoolDriver`): when the source
 * changes, the manager verifies a new generation with a real connection, new checkouts
 * move to it at once, and the old one drains: idle clients close immediately,
 * checked-out clients close when released, and whatever is still checked out after
 * `drainTimeoutMillis` is force-closed with a `ForceClosedError`.
 *
 * Checkouts never queue inside a generation: the pool keeps its own wait queue and asks a
 * generation for at most `max` clients, so waiters at switch time are served by the new
 * generation. Without `hotload.source` it is a single generation built from the pg options,
 * i.e. plain `pg.Pool` behaviour (plus {@link Pool.switchTo}).
 */
export class Pool extends pg.Pool {
  readonly #config: pg.PoolConfig;
  readonly #manager: GenerationManager<Generation, pg.PoolClient>;
  /** Set for a pool without `hotload.source`: its one config, built from the pg options. */
  readonly #fixed: PgOptionsSource | undefined;
  /** Every generation not yet closed: current, retiring and candidates being verified. */
  readonly #generations = new Set<Generation>();
  readonly #forwarded = new Set<ForwardedEvent>();
  readonly #waiting: CheckoutQueue;
  #current: Generation | undefined;
  /** The options pg-pool's constructor computed (see the `options` accessor). */
  declare [baseOptions]: pg.PoolConfig;
  /** True once `end()` was called (pg.Pool's field; set by pg-pool's constructor, then by `end()`). */
  declare ending: boolean;
  /** True once `end()` has closed every generation (pg.Pool's field). */
  declare ended: boolean;
  readonly #name: string | undefined;
  /** Credential failures in a row on the serving generation: the growth pause backs off. */
  #credentialFailures = 0;

  /**
   * Same options as `pg.Pool`, plus `hotload` (see {@link HotloadOptions}). A client class
   * passed second is used as pg-pool's own constructor uses it (unless the `Client` option
   * names one), so code written against `pg-pool` switches too; it stays out of the type,
   * which is pg.Pool's, so the class remains interchangeable with it.
   */
  constructor(config?: PoolConfig) {
    const { hotload, ...options } = copyPoolConfig(config);
    // biome-ignore lint/complexity/noArguments: pg-pool's second parameter, kept out of the signature (see above)
    const Client: unknown = arguments[1];
    const pgConfig = (Client && !options.Client ? { ...options, Client } : options) as pg.PoolConfig;
    // pg-pool's constructor only records options (defaults applied, password hidden) and
    // empty queues; it opens nothing. Its queues stay unused: generations do the pooling.
    super(pgConfig);
    this.#config = pgConfig;
    this.#waiting = new CheckoutQueue(pgConfig.connectionTimeoutMillis);
    this.#name = hotload?.name;
    this.#fixed = hotload?.source === undefined ? new PgOptionsSource(pgConfig) : undefined;
    const lifecycle: LifecycleOptions<pg.PoolClient> = {
      ...hotload,
      source: hotload?.source ?? this.#fixed!,
      name: hotload?.name ?? (this.#fixed ? STATIC_SOURCE_NAME : undefined),
      // As pg.Pool, a pool without a source serves at once (its first generation exists now).
      ...(this.#fixed ? { initialConfig: this.#fixed.config } : {}),
      // The fixed config has nothing to watch or re-read.
      watcher: this.#fixed ? { watchMode: 'none', resyncIntervalMillis: 0 } : hotload?.watcher,
    };
    // The manager runs the observers (metrics, logs, diagnostics) before it watches: a
    // constructor that throws leaves nothing running. Its watcher never keeps the process
    // alive (pg.Pool would not).
    this.#manager = new GenerationManager(new PgPoolDriver(this.#driverOwner), lifecycle);
    for (const event of LIFECYCLE_EVENTS) {
      this.#manager.on(event, (payload: unknown) => void this.emit(event, payload));
    }
  }

  /** `hotload.name`: this pool's name in metrics, diagnostics and logs (undefined if not given). */
  get hotloadName(): string | undefined {
    return this.#name;
  }

  /** The watcher of `hotload.source` (undefined without a source), e.g. to observe its `change` events. */
  get sourceWatcher(): SourceWatcher | undefined {
    return this.#fixed ? undefined : this.#manager.sourceWatcher;
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
    return this.#manager.whenServing().then(noop);
  }

  /**
   * Switches to `config` as if the source had changed to it: verify (retrying with
   * backoff while it fails), switch, drain (the lifecycle manager's `switchTo`). Resolves
   * `true` once the pool serves on it, `false` if superseded by a newer change or by `end()`.
   */
  switchTo(config: ConnectionConfig): Promise<boolean> {
    if (this.ending) return Promise.resolve(false);
    return this.#manager.switchTo(config);
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

  /**
   * pg.Pool's events, typed as strictly as pg's typings do, plus hotload's (see {@link PoolEvents}).
   * pg's overload comes first: a listener written for pg.Pool infers pg's parameter types
   * (`release`'s `err` is `Error`, as `@types/pg` declares it), so it compiles here unchanged.
   */
  override on<K extends PgPoolEvent>(event: K, listener: PgPoolListener<K>): this;
  /** hotload's lifecycle events (`switch`, `verifyFailed`, `drained`, `forceClosed`, `sourceError`), and pg's as {@link PoolEvents} types them. */
  override on<K extends keyof PoolEvents>(event: K, listener: (...args: PoolEvents[K]) => void): this;
  override on(event: keyof PoolEvents, listener: (...args: never[]) => void): this {
    this.#forwardOnDemand(event);
    return super.on(event as 'error', listener as never);
  }

  /** As {@link Pool.(on:1)}, for one event. */
  override once<K extends PgPoolEvent>(event: K, listener: PgPoolListener<K>): this;
  /** As the second overload of {@link Pool.(on:2)}, for one event. */
  override once<K extends keyof PoolEvents>(event: K, listener: (...args: PoolEvents[K]) => void): this;
  override once(event: keyof PoolEvents, listener: (...args: never[]) => void): this {
    this.#forwardOnDemand(event);
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
    lifecycleOfPool = (pool) => pool.#manager;
    // The other ways to add a listener (`on` and `once` are above) forward on demand too.
    for (const add of ['addListener', 'prependListener', 'prependOnceListener'] as const) {
      const inherited = prototype[add];
      prototype[add] = function addListener(
        this: Pool,
        event: string | symbol,
        listener: (...args: unknown[]) => void,
      ) {
        this.#forwardOnDemand(event);
        return inherited.call(this, event, listener);
      } as Pool[typeof add];
    }
    // pg.Pool types the counts as properties; pg-pool (and this class) makes them getters.
    defineGetters(prototype, {
      totalCount: (pool: Pool) => pool.#connectingFirst() + pool.#sum((generation) => generation.totalCount),
      idleCount: (pool: Pool) => pool.#sum((generation) => generation.idleCount),
      waitingCount: (pool: Pool) =>
        pool.#waiting.length - pool.#connectingFirst() + pool.#sum((generation) => generation.waitingCount),
      expiredCount: (pool: Pool) => pool.#sum((generation) => generation.expiredCount),
    });
    // pg-pool's `_clients`, `_idle` and `_pendingQueue`, which programs and pg's own tests
    // read (see pg-pool-lists.ts): every generation's, and for `_pendingQueue` first the
    // checkouts waiting in this pool's own queue (those pg.Pool would count as connecting
    // excepted, as in `waitingCount`). Writes are dropped: pg-pool's constructor sets them on
    // this outer pool, which never uses them (its fields do not exist yet then, hence the
    // brand checks).
    defineGetters(
      prototype,
      {
        _clients: (pool: Pool) => (#generations in pool ? pool.#flatten(clientsOf) : []),
        _idle: (pool: Pool) => (#generations in pool ? pool.#flatten(idleItemsOf) : []),
        _pendingQueue: (pool: Pool): PgPoolPendingItem[] =>
          #waiting in pool
            ? [
                ...pool.#waiting.waiters.slice(pool.#connectingFirst()).map(({ callback }) => ({ callback })),
                ...pool.#flatten(pendingItemsOf),
              ]
            : [],
      },
      noop,
    );
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

  /** This pool's members that pg-pool's constructor set (see {@link PgPoolMembers}). */
  get #own(): PgPoolMembers {
    return this as unknown as PgPoolMembers;
  }

  /**
   * Checkouts waiting for the first config, up to `max`: pg.Pool would be connecting a
   * client for each already, and counts them in `totalCount` (not `waitingCount`).
   */
  #connectingFirst(): number {
    if (this.#current !== undefined || this.#waiting.length === 0) return 0;
    return Math.min(this.#waiting.length, this.options.max);
  }

  #connect(cb: CheckoutCallback | undefined): Promise<pg.PoolClient> | undefined {
    if (this.ending) {
      const err = new Error(ENDED_MESSAGE);
      // pg-pool calls back with the error alone here.
      if (cb) return void (cb as (err: Error) => void)(err);
      return rejectedWith(this.#own.Promise, err);
    }
    const response = promisify<pg.PoolClient>(this.#own.Promise, cb);
    this.#checkout(response.callback as CheckoutCallback);
    return response.result;
  }

  #query(text: unknown, values: unknown, callback: unknown): unknown {
    if (typeof text === 'function') {
      const response = promisify(this.#own.Promise, text as NodeCallback<never>);
      setImmediate(() =>
        response.callback(
          new Error('Passing a function as the first parameter to pool.query is not supported'),
        ),
      );
      return response.result;
    }
    if (typeof values === 'function') {
      callback = values;
      values = undefined;
    }
    if (isSubmittable(text))
      return this.#querySubmittable(text, (callback || undefined) as QueryCallback | undefined);
    const response = promisify<pg.QueryResult>(this.#own.Promise, callback as QueryCallback | undefined);
    // Named `cb` as in pg-pool: a callback that is not a function is called all the same,
    // and the TypeError it throws ("cb is not a function") reads as pg.Pool's.
    const cb = response.callback;
    this.#checkout((err, client) => {
      if (err !== undefined || client === undefined) return cb(err);
      // As pg-pool does: a client error while the query runs ends it and drops the client.
      let released = false;
      const onError = (clientError: Error): void => {
        if (released) return;
        released = true;
        client.release(clientError);
        cb(clientError);
      };
      client.once('error', onError);
      // pg-pool's log lines for a query (to its `log` option; a no-op by default).
      const logger = this.#own;
      logger.log('dispatching query');
      try {
        client.query(
          text as string,
          values as unknown[],
          (queryError: Error | null, result: pg.QueryResult) => {
            logger.log('query dispatched');
            client.removeListener('error', onError);
            if (released) return;
            released = true;
            client.release(queryError as Error); // as is (null too): pg-pool emits it in `release`
            if (queryError) return cb(queryError);
            cb(undefined, result);
          },
        );
      } catch (thrown) {
        client.release(thrown as Error);
        cb(thrown as Error);
      }
    });
    return response.result;
  }

  /**
   * `pool.query(submittable)` (pg's `Query`, pg-cursor, pg-query-stream, ...): returns the
   * submittable at once (as pg's types declare) and gives the client back when it is done:
   * its `end` event (cursors, also after `close()`), the callback pg's Client hands it
   * (query streams report there), or an error the client hands it (SQL or connection: the
   * client then goes back with that error, as `pool.query` gives back a failed client). As
   * pg-pool does, a client error while it runs is listened to (no crash) and ends it.
   */
  #querySubmittable(submittable: SubmittableLike, cb: QueryCallback | undefined): SubmittableLike {
    this.#checkout((err, client) => {
      if (err !== undefined || client === undefined) {
        const error = err ?? new Error('hotload-pg: checkout returned no client');
        submittable.handleError?.(error);
        return cb?.(error);
      }
      let released = false;
      const finish = (error?: Error | null, result?: unknown): void => {
        if (released) return;
        released = true;
        client.removeListener('error', finish);
        client.release(error ?? undefined);
        cb?.(error ?? undefined, result);
      };
      client.once('error', finish);
      submittable.once?.('end', (result?: unknown) => finish(undefined, result));
      afterHandledError(submittable, finish);
      if (submittable instanceof pg.Query) {
        // pg's Client (8.2x) makes a callback given with a Query the Query's own, and the
        // Query then reports its error there instead of its 'error' event (and buffers every
        // row). This pool returns the Query itself rather than a promise, so it gives it none:
        // the Query reports through its own events (or its own callback), never swallowed.
        client.query(submittable);
        return;
      }
      (client.query as LooseQuery).call(client, submittable, finish);
    });
    return submittable;
  }

  #end(cb: ((err?: Error) => void) | undefined): Promise<void> | undefined {
    if (this.ending) {
      // pg-pool's answer to a second end(), word for word.
      const err = new Error('Called end on pool more than once');
      if (!cb) return rejectedWith(this.#own.Promise, err);
      cb(err);
      return undefined;
    }
    this.ending = true;
    const response = promisify<void>(this.#own.Promise, cb);
    // As pg-pool, the callback is called with no arguments once the pool has ended.
    const ended = response.callback as (err?: Error) => void;
    this.#closeAll().then(() => ended(), ended);
    return response.result;
  }

  async #closeAll(): Promise<void> {
    // Work asked before end() is served, as pg.Pool serves it: once the first config is
    // there (if it is still being read), by the generation then serving.
    // (Awaited even when serving: a client released right after end() serves a waiter first.)
    let unavailable: Error | undefined;
    await this.#manager.whenServing().catch((error: Error) => (unavailable = error));
    this.#serveWaiters();
    this.#waiting.failAll(unavailable ?? new Error(ENDED_MESSAGE));
    // Cancels a switch in flight (its candidate is discarded), lets retiring generations
    // keep their drain deadline and drains the current one, waiting for its holders as
    // pg.Pool's end() does.
    await this.#manager.close();
    this.ended = true;
  }

  /**
   * Hot path: straight to the current generation when it has room and nobody waits (its
   * own pg-pool applies `connectionTimeoutMillis` to the new connection, if one is needed).
   */
  #checkout(callback: CheckoutCallback): void {
    const current = this.#current;
    if (current !== undefined && this.#waiting.length === 0 && current.hasCapacity() && !this.ending) {
      current.checkout(callback);
      return;
    }
    if (this.ending) {
      // At once, as pg-pool's connect() refuses an ended pool (pool.query's callback included).
      callback(new Error(ENDED_MESSAGE), undefined, noop);
      return;
    }
    const connecting = current === undefined && this.#waiting.length < this.options.max;
    const waiter = this.#waiting.create(callback, connecting);
    this.#waiting.add(waiter);
    // Room may have appeared without a checkin (a program raised `pool.options.max`, which
    // pg-pool reads live): serve the queue, first come first served.
    if (current?.hasCapacity()) this.#serveWaiters();
    // No generation yet: served on the first promotion, or failed at once with the
    // SourceError while the source is invalid.
    if (current === undefined) {
      this.#manager.whenServing().catch((error: Error) => this.#waiting.settle(waiter, error));
    }
  }

  /** Hands waiting checkouts to the current generation while it has room. */
  #serveWaiters(): void {
    const current = this.#current;
    if (current === undefined) return;
    while (this.#waiting.length > 0 && current.hasCapacity()) {
      const waiter = this.#waiting.shift()!;
      // The waiter goes along as context: a failed connect may queue it again, timer running.
      try {
        current.checkout(
          (err, client, release) => this.#waiting.settle(waiter, err, client, release),
          false,
          waiter,
        );
      } catch (error) {
        // pg-pool throws out of connect() when its Client cannot be built (an option pg's
        // Client refuses, such as pg 8.23's `sslnegotiation: 'direct'` without TLS). pg.Pool
        // throws that to the caller; this checkout's caller has returned already (it waited
        // for the first config), so it gets the error through its callback or promise.
        // A throw of the caller's own callback (settled already) goes on up, as before.
        if (waiter.settled) throw error;
        this.#waiting.settle(waiter, error as Error);
      }
    }
  }

  readonly #generationHooks: GenerationHooks = {
    onCheckin: () => {
      if (this.#waiting.length > 0) this.#serveWaiters();
    },
    onClosed: (generation) => {
      this.#generations.delete(generation);
    },
    onConnectFailed: (generation, err, callback, context) =>
      this.#requeueAfterConnectFailure(generation, err, callback, context as Waiter | undefined),
    // A refused login re-reads the source; with a host list, a failover signal re-selects.
    onError: (generation, err) => this.#manager.reportError(generation, err),
  };

  /** What the driver may do to this pool (kept off the public surface). */
  readonly #driverOwner = {
    hooks: this.#generationHooks,
    poolOptions: (config: ConnectionConfig, host: HostPort): pg.PoolConfig =>
      // The fixed config of a pool without a source stands for the pg options as they are.
      config === this.#fixed?.config ? this.#config : toPgPoolConfig(this.#config, config, host),
    adopt: (generation: Generation): void => {
      this.#generations.add(generation);
      for (const event of FORWARDED_EVENTS) {
        if (event === 'error' || this.#forwarded.has(event)) this.#forward(generation, event);
      }
    },
    promote: (candidate: Generation): void => {
      this.#current = candidate;
      this.#credentialFailures = 0;
      this.#serveWaiters();
    },
  };

  /**
   * A new connection failed. The request fails too, as with pg.Pool, unless someone else
   * can serve it: a newer generation (the failing one is retired), or, for a credential
   * failure (28P01/28000) of the serving generation of a pool with a source, that
   * generation's clients as they are released (if it has any) or the generation of the
   * new secret. That is the password changed in the database a moment before the secret
   * (with or without open clients: an idle service's clients may all have timed out): the manager re-reads the source at once and bounds the wait by
   * `credentialWaitMillis` (`connectionTimeoutMillis` still runs from the checkout); the
   * request waits at the head of the queue, and the generation tries one new connection
   * at a time with backoff meanwhile.
   */
  #requeueAfterConnectFailure(
    generation: Generation,
    err: Error,
    callback: CheckoutCallback,
    queuedBefore: Waiter | undefined,
  ): boolean {
    if (this.ending) return false;
    const serving = generation === this.#current;
    if (serving && (this.#fixed !== undefined || !isCredentialFailure(err))) {
      return false;
    }
    // A connecting checkout whose time ran out during this connect fails with its error, as
    // pg.Pool's connect would (its timer is pg-pool's, see Waiter.connecting).
    if (queuedBefore?.expired) return false;
    // A checkout that went straight to the generation gets its clock now: its own connect
    // was bounded by connectionTimeoutMillis already (no time is read on that hot path).
    const waiter = queuedBefore ?? this.#waiting.create(callback);
    if (serving) {
      if (!waiter.awaitingCredentials) {
        waiter.awaitingCredentials = true;
        // Resolves on the next promotion (which serves the queue); rejects with `err` at the deadline.
        this.#manager
          .awaitCredentialChange(generation, err)
          .catch((error: Error) => this.#waiting.settle(waiter, error));
      }
      this.#pauseAfterCredentialFailure(generation);
    }
    if (waiter.settled) return true; // timed out meanwhile: answered already
    this.#waiting.add(waiter, true);
    return true;
  }

  #pauseAfterCredentialFailure(generation: Generation): void {
    if (!generation.growthPaused) this.#credentialFailures++;
    const { verifyRetryInitialMillis, verifyRetryMaxMillis } = this.#manager.options;
    generation.pauseGrowth(
      backoffDelay(this.#credentialFailures, verifyRetryInitialMillis, verifyRetryMaxMillis),
    );
  }

  /** Forwards a pg-pool event of one generation; 'error' always (pg-pool must not throw it unheard). */
  #forward(generation: Generation, event: ForwardedEvent): void {
    generation.pool.on(event, (...args: unknown[]) => {
      // A socket error that races a closed generation's last goodbye concerns nobody.
      if (event === 'error' && generation.closed) return;
      this.emit(event, ...args);
    });
  }

  /**
   * Forwards connect/acquire/release/remove only once someone listens: nothing per query
   * otherwise. Called by every method that adds a listener (rather than from a
   * 'newListener' listener, which `removeAllListeners()` would remove and `eventNames()`
   * would show, unlike pg.Pool's).
   */
  #forwardOnDemand(event: string | symbol): void {
    const name = event as ForwardedEvent;
    if (name === 'error' || !FORWARDED_EVENTS.includes(name) || this.#forwarded.has(name)) return;
    this.#forwarded.add(name);
    for (const generation of this.#generations) this.#forward(generation, name);
  }

  /** `list` of every generation's pool, oldest generation first. */
  #flatten<T>(list: (pool: pg.Pool) => readonly T[]): T[] {
    const items: T[] = [];
    for (const generation of this.#generations) items.push(...list(generation.pool));
    return items;
  }

  #sum(count: (pool: pg.Pool) => number): number {
    let total = 0;
    for (const generation of this.#generations) total += count(generation.pool);
    return total;
  }
}

/** The lifecycle manager a pool is a driver of, for the observers (`instrumentPool`, `logPoolEvents`). */
export function lifecycleOf(pool: Pool): ObservableLifecycle {
  return lifecycleOfPool(pool);
}

/**
 * Defines getters on `prototype`, each computed from the instance. With `set`, writes go
 * to it (for members pg-pool's constructor assigns); without, the members are read-only.
 */
function defineGetters<T>(
  prototype: T,
  getters: Record<string, (instance: T) => unknown>,
  set?: (this: T, value: unknown) => void,
): void {
  for (const [name, get] of Object.entries(getters)) {
    Object.defineProperty(prototype, name, {
      configurable: true,
      get(this: T) {
        return get(this);
      },
      ...(set ? { set } : {}),
    });
  }
}

/**
 * Members pg-pool's constructor sets from the options, which pg's typings do not declare
 * (so neither does this class): `Promise`, the class of the promises `connect()`, `query()`
 * and `end()` return without a callback (the `Promise` option, else the global one), and
 * `log`, where pg-pool writes its debug lines (the `log` option, else a no-op).
 */
interface PgPoolMembers {
  readonly Promise: PromiseConstructorLike;
  log(message: string): void;
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
  handleError?: (err: Error, ...rest: unknown[]) => unknown;
  once?: (event: string, listener: (...args: never[]) => void) => unknown;
}

/**
 * Runs `then(err)` after `submittable` has handled an error its client hands it (pg's
 * Client calls `handleError` for a SQL error and for a lost connection). A cursor or a
 * Query with its own callback reports an error there and never emits `end`.
 */
function afterHandledError(submittable: SubmittableLike, then: (err: Error) => void): void {
  const handleError = submittable.handleError;
  if (typeof handleError !== 'function') return;
  submittable.handleError = function handleErrorThenRelease(this: unknown, err: Error, ...rest: unknown[]) {
    try {
      return handleError.call(this, err, ...rest);
    } finally {
      then(err);
    }
  };
}

function isSubmittable(value: unknown): value is SubmittableLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { submit?: unknown }).submit === 'function'
  );
}
