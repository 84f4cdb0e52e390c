import {
  type ConnectionConfig,
  type ConnectionCounts,
  GenerationManager,
  type HostPort,
  type LifecycleOptions,
  type ObservableLifecycle,
  type SourceWatcher,
} from 'hotload-core';
import pg from 'pg';
import { ConnectFailureRequeue } from './connect-failure-requeue.js';
import { LIFECYCLE_EVENTS, type PgPoolEvent, type PgPoolListener, type PoolEvents } from './events.js';
import type { Generation, GenerationHooks } from './generation.js';
import type { CheckoutCallback } from './generation-checkout.js';
import { GenerationSet } from './generation-set.js';
import { copyPoolConfig, type PoolConfig } from './options.js';
import { PgOptionsSource, STATIC_SOURCE_NAME } from './pg-options-source.js';
import { toPgPoolConfig } from './pg-pool-config.js';
import { PgPoolDriver } from './pg-pool-driver.js';
import type { PgPoolMembers } from './pg-pool-members.js';
import { definePgPoolViews } from './pg-pool-views.js';
import { poolQuery } from './pool-query.js';
import { promisify, rejectedWith } from './promisify.js';
import { WaitQueue } from './wait-queue.js';
import type { Waiter } from './waiter.js';

/** pg-pool's error for work asked after `end()`. */
const ENDED_MESSAGE = 'Cannot use a pool after calling end on the pool';

const noop = (): void => {};

/** Set by the class's static block, which may read its private fields. */
let lifecycleOfPool: (pool: Pool) => ObservableLifecycle;

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
  /** Every generation not yet closed (serving, retiring, candidates), their events forwarded. */
  readonly #generations = new GenerationSet((event, ...args) => this.emit(event, ...args));
  readonly #waiting: WaitQueue;
  readonly #requeue: ConnectFailureRequeue;
  /** True once `end()` was called (pg.Pool's field; set by pg-pool's constructor, then by `end()`). */
  declare ending: boolean;
  /** True once `end()` has closed every generation (pg.Pool's field). */
  declare ended: boolean;
  readonly #name: string | undefined;

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
    this.#waiting = new WaitQueue(pgConfig.connectionTimeoutMillis);
    this.#name = hotload?.name;
    this.#fixed = hotload?.source === undefined ? new PgOptionsSource(pgConfig) : undefined;
    this.#requeue = new ConnectFailureRequeue({
      queue: this.#waiting,
      lifecycle: () => this.#manager,
      followsSource: this.#fixed === undefined,
      ending: () => this.ending,
    });
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

  /** The generation serving new checkouts: the lifecycle's (none while its constructor runs). */
  get #serving(): Generation | undefined {
    return this.#manager?.current;
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
    const current = this.#serving?.pool.totalCount ?? 0;
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
    if (this.#serving !== undefined) return Promise.resolve();
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
    return this.#manager.generation;
  }

  /** Ids of generations still open besides the current one (retiring or being verified). */
  get otherGenerations(): number[] {
    return this.#generations.idsBesides(this.#serving);
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
    this.#generations.forwardOnDemand(event);
    return super.on(event as 'error', listener as never);
  }

  /** As {@link Pool.(on:1)}, for one event. */
  override once<K extends PgPoolEvent>(event: K, listener: PgPoolListener<K>): this;
  /** As the second overload of {@link Pool.(on:2)}, for one event. */
  override once<K extends keyof PoolEvents>(event: K, listener: (...args: PoolEvents[K]) => void): this;
  override once(event: keyof PoolEvents, listener: (...args: never[]) => void): this {
    this.#generations.forwardOnDemand(event);
    return super.once(event, listener as (...args: unknown[]) => void);
  }

  static {
    // The public query/connect/end keep pg.Pool's overloaded types (inherited); their
    // bodies live here so they can reach the private fields. Through `this`: naming the
    // class inside its body makes esbuild rename it `_Pool`, which is how it would print.
    // biome-ignore lint/complexity/noThisInStatic: see above
    const prototype: Pool = this.prototype;
    prototype.query = function query(this: Pool, text: unknown, values?: unknown, cb?: unknown) {
      return poolQuery(this.#querying, text, values, cb);
    } as pg.Pool['query'];
    prototype.connect = function connect(this: Pool, cb?: CheckoutCallback) {
      // The hot path of #connect and #checkout in one frame: fewer calls leave V8 room to
      // inline pg-pool's own connect here (issue 29.1).
      const serving = this.#manager.current;
      if (serving !== undefined && !this.ending && this.#waiting.length === 0 && serving.hasCapacity()) {
        const response = promisify<pg.PoolClient>(this.#own.Promise, cb);
        serving.checkout(response.callback as CheckoutCallback);
        return response.result;
      }
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
        this.#generations.forwardOnDemand(event);
        return inherited.call(this, event, listener);
      } as Pool[typeof add];
    }
    // The counts, pg-pool's lists and `options`, over every generation (see pg-pool-views.ts).
    // pg-pool's constructor writes some of them before this class's fields exist, hence the brand check.
    definePgPoolViews(prototype, (pool: Pool) =>
      #waiting in pool
        ? { generations: pool.#generations, queue: pool.#waiting, serving: pool.#serving }
        : undefined,
    );
  }

  /**
   * This pool's members that pg-pool's constructor set (see {@link PgPoolMembers}). A
   * field, not an accessor: V8 runs a private accessor through the runtime, on the
   * checkout's hot path (issue 29.1).
   */
  readonly #own: PgPoolMembers = this as unknown as PgPoolMembers;

  /** What `pool.query` works with (see pool-query.ts). */
  readonly #querying = {
    checkout: (callback: CheckoutCallback): void => this.#checkout(callback),
    members: this.#own,
  };

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
   * Hot path: straight to the serving generation when it has room and nobody waits (its
   * own pg-pool applies `connectionTimeoutMillis` to the new connection, if one is needed).
   * Otherwise the checkout waits in the queue (see wait-queue.ts).
   */
  #checkout(callback: CheckoutCallback): void {
    // The manager itself, not the `#serving` accessor: V8 runs a private accessor through
    // the runtime, about 60 instructions a checkout (issue 29.1).
    const serving = this.#manager.current;
    if (serving !== undefined && this.#waiting.length === 0 && serving.hasCapacity() && !this.ending) {
      serving.checkout(callback);
      return;
    }
    if (this.ending) {
      // At once, as pg-pool's connect() refuses an ended pool (pool.query's callback included).
      callback(new Error(ENDED_MESSAGE), undefined, noop);
      return;
    }
    const connecting = serving === undefined && this.#waiting.length < this.options.max;
    const waiter = this.#waiting.create(callback, connecting);
    this.#waiting.add(waiter);
    // Room may have appeared without a checkin (a program raised `pool.options.max`, which
    // pg-pool reads live): serve the queue, first come first served.
    if (serving?.hasCapacity()) this.#waiting.serve(serving);
    // No generation yet: served on the first promotion, or failed at once with the
    // SourceError while the source is invalid.
    if (serving === undefined) {
      this.#manager.whenServing().catch((error: Error) => this.#waiting.settle(waiter, error));
    }
  }

  /** Hands waiting checkouts to the serving generation while it has room. */
  #serveWaiters(): void {
    const serving = this.#manager.current; // not the private accessor: see #checkout
    if (serving !== undefined) this.#waiting.serve(serving);
  }

  readonly #generationHooks: GenerationHooks = {
    onCheckin: () => {
      if (this.#waiting.length > 0) this.#serveWaiters();
    },
    onClosed: (generation) => this.#generations.delete(generation),
    // A failed connect: queued again if a newer generation, or the new secret's, can serve it.
    onConnectFailed: (generation, err, request) =>
      this.#requeue.takeOver(generation, err, request as CheckoutCallback | Waiter),
    // A checkout a generation served for a waiter of the queue (see WaitQueue.serve).
    answerWaiter: (waiter, err, client, release) =>
      this.#waiting.settle(waiter as Waiter, err, client, release),
    // A refused login re-reads the source; with a host list, a failover signal re-selects.
    onError: (generation, err) => this.#manager.reportError(generation, err),
    // The connection budget across a switch: the generations still draining count too.
    connectionsElsewhere: (generation) => this.#generations.openBesides(generation),
  };

  /** What the driver may do to this pool (kept off the public surface). */
  readonly #driverOwner = {
    hooks: this.#generationHooks,
    poolOptions: (config: ConnectionConfig, host: HostPort): pg.PoolConfig =>
      // The fixed config of a pool without a source stands for the pg options as they are.
      config === this.#fixed?.config ? this.#config : toPgPoolConfig(this.#config, config, host),
    adopt: (generation: Generation): void => this.#generations.adopt(generation),
    // The lifecycle serves `candidate` already (its `current`): move the waiters there.
    promote: (candidate: Generation): void => {
      this.#requeue.servingChanged();
      this.#waiting.serve(candidate);
    },
  };
}

/** The lifecycle manager a pool is a driver of, for the observers (`instrumentPool`, `logPoolEvents`). */
export function lifecycleOf(pool: Pool): ObservableLifecycle {
  return lifecycleOfPool(pool);
}
