import type pg from 'pg';
import { ForceClosedError } from './errors.js';
import { forceCloseClient, isForceClosed } from './force-close.js';
import { type CheckoutAnswerer, type CheckoutCallback, GenerationCheckout } from './generation-checkout.js';
import { GenerationPgPool, type PgRelease, type ReleaseObserver } from './generation-pg-pool.js';
import { clientsOf } from './pg-pool-lists.js';

const noop = (): void => {};

// pg-pool's release function of the current checkout, kept on the client itself while it
// is checked out (undefined when idle): per query a property write, where a Map of
// checked-out clients would churn its hash table.
const pgReleaseOf = Symbol('hotload-pg.pgRelease');
type TrackedClient = pg.PoolClient & { [pgReleaseOf]?: PgRelease | undefined };
/** pg's Client sets `_ending` when its end() is called (pg-pool reads it on release too). */
type EndingClient = pg.PoolClient & { _ending?: boolean };

/** What a generation tells the pool that owns it. */
export interface GenerationHooks {
  /** After each checkout ends (released or failed), so waiters can be served. */
  onCheckin(generation: Generation): void;
  /** Once the generation's pool has closed its last client. */
  onClosed(generation: Generation): void;
  /**
   * A checkout failed to open a new connection. Returning true takes the request over
   * (the pool queues it again); false lets it fail with `err`. `request` is the caller's
   * callback given to {@link Generation.checkout}, or the waiter given to
   * {@link Generation.checkoutFor}.
   */
  onConnectFailed(generation: Generation, err: Error, request: CheckoutCallback | object): boolean;
  /**
   * Answers a checkout asked by {@link Generation.checkoutFor} for `waiter` (one function
   * for all of them: no closure per waiter).
   */
  answerWaiter(
    waiter: object,
    err: Error | undefined,
    client: pg.PoolClient | undefined,
    release: (err?: Error | boolean) => void,
  ): void;
  /**
   * A client of the generation failed: a checkout's connect, a release with an error
   * (`pool.query` releases with the query's error) or an idle client's socket.
   */
  onError?(generation: Generation, err: Error): void;
  /**
   * Open connections (connecting ones included) of the pool's other promoted generations,
   * serving or retiring: what {@link Generation.hasCapacity} leaves out of its own `max`
   * so that all generations together never open more than `max` (see {@link Generation.openCount}).
   */
  connectionsElsewhere?(generation: Generation): number;
}

/**
 * One generation: one real `pg.Pool` built from one connection config, plus what the
 * hotload pool needs around it: how many checkouts it owes (so the hotload pool never
 * lets requests queue inside it), which clients are checked out (so a drain can
 * force-close them) and its close/drain logic.
 */
export class Generation implements ReleaseObserver, CheckoutAnswerer {
  /** The generation's own pool; queries run on its clients. */
  readonly pool: GenerationPgPool;
  /**
   * pg-pool's `max`, read live as pg-pool reads it (a program may change
   * `pool.options.max`): never more checkouts than this are asked of {@link pool}.
   */
  get max(): number {
    return this.pool.options.max;
  }
  /** Checkouts asked of this generation and not yet given back (connecting ones included). */
  outstanding = 0;
  /** Set while growth is paused after a failed connect: checkouts allowed meanwhile (see {@link pauseGrowth}). */
  #pausedLimit: number | undefined;
  #growthTimer: NodeJS.Timeout | undefined;
  /** After a pause: one new connection is being allowed (see {@link pauseGrowth}). */
  #probing = false;
  /** Connected clients whose socket is not closed yet ('connect' minus 'remove'). */
  readonly #clients = new Set<TrackedClient>();
  #lastRemoved: (() => void) | undefined;
  /** Checkouts asked of {@link pool} that it has not called back yet. */
  #unanswered = 0;
  #allAnswered: (() => void) | undefined;
  #closing: Promise<void> | undefined;
  #forceClosedError: ForceClosedError | undefined;

  /**
   * @param id increasing generation number, used in events and errors
   * @param config options of the generation's `pg.Pool` (its `Client` option picks the client class)
   * @param hooks what the owning pool wants to hear about
   */
  constructor(
    readonly id: number,
    config: pg.PoolConfig,
    private readonly hooks: GenerationHooks,
  ) {
    this.pool = new GenerationPgPool(config, this);
    this.pool.on('connect', (client) => {
      this.#clients.add(client as TrackedClient);
      this.#resumeGrowth();
    });
    if (hooks.onError !== undefined) this.pool.on('error', (err) => hooks.onError?.(this, err));
    this.pool.on('remove', (client) => {
      this.#clients.delete(client as TrackedClient);
      if (this.#clients.size === 0) this.#lastRemoved?.();
      // A slot pg-pool frees by a remove is when it serves its own waiters: ours too (see #giveBack).
      this.hooks.onCheckin(this);
    });
  }

  /**
   * True once the generation was promoted (it serves, or served and is retiring): its
   * connections count against the budget of the pool's other generations. A candidate
   * being verified is not counted: its one connection is the `+ 1` of `max + 1`.
   */
  promoted = false;

  /**
   * True while a checkout would neither wait inside the generation's pool nor break the
   * connection budget: a checkout an idle client serves always may; one that opens a new
   * connection only while this generation's connections plus the other generations'
   * (still draining after a switch) are fewer than `max`. So across a switch the pool
   * holds at most `max + 1` connections (the `+ 1` being the verify connection, which
   * this generation took over): it grows as the old one shrinks.
   */
  hasCapacity(): boolean {
    if (this.outstanding >= (this.#pausedLimit ?? this.max)) return false;
    // A client it has is free (idle, or being handed back): no new connection.
    if (this.outstanding < this.pool.totalCount) return true;
    return this.#withinBudget();
  }

  /** True if one more connection keeps all generations of the pool within `max`. */
  #withinBudget(): boolean {
    const elsewhere = this.hooks.connectionsElsewhere?.(this) ?? 0;
    return elsewhere === 0 || this.openCount + elsewhere < this.max;
  }

  /**
   * Connections of this generation whose socket may be open: connecting, idle, checked out,
   * and those pg-pool has dropped but whose socket has not closed yet ('remove' not seen).
   * Counted by the socket, as the server counts them.
   */
  get openCount(): number {
    let connecting = 0;
    for (const client of clientsOf(this.pool)) if (!this.#clients.has(client as TrackedClient)) connecting++;
    return this.#clients.size + connecting;
  }

  /**
   * Stops opening new connections for `millis`: checkouts are served only by the clients
   * it already has, as they come back. Used when a new connection failed while others
   * work, typically because the password was changed in the database a moment before the
   * secret: the old generation cannot grow any more, but its clients still serve. When
   * the pause ends, one new connection is tried (not one per waiting checkout: that would
   * storm the server with logins it refuses); growth resumes once one connects.
   */
  pauseGrowth(millis: number): void {
    this.#probing = false;
    this.#pausedLimit = Math.min(this.#pausedLimit ?? this.max, this.outstanding);
    clearTimeout(this.#growthTimer);
    this.#growthTimer = setTimeout(() => this.#probe(), millis);
    this.#growthTimer.unref();
  }

  /** Room for one more connection than checked out, for whoever waits. */
  #probe(): void {
    this.#probing = true;
    this.#pausedLimit = Math.min(this.max, this.outstanding + 1);
    this.hooks.onCheckin(this);
  }

  /** A new connection got through: the pause is over. */
  #resumeGrowth(): void {
    if (this.#pausedLimit === undefined) return;
    clearTimeout(this.#growthTimer);
    this.#probing = false;
    this.#pausedLimit = undefined;
    // After pg-pool has handed the new client to its checkout: then serve the others.
    process.nextTick(() => this.hooks.onCheckin(this));
  }

  /**
   * True while {@link pauseGrowth} holds new connections back (not while its one
   * connection after the pause is allowed: a failure then is a new failure).
   */
  get growthPaused(): boolean {
    return this.#pausedLimit !== undefined && this.#pausedLimit < this.max && !this.#probing;
  }

  /**
   * True once {@link Generation.drain} has finished: the generation was retired (or
   * discarded, or its pool ended) and its last client is closed.
   */
  drained = false;

  /**
   * Checks a client out of this generation for `callback`; the caller must have checked
   * {@link hasCapacity}. With `direct`, a failed connect goes straight to `callback`
   * (verify wants the error); otherwise the pool may take the request over.
   */
  checkout(callback: CheckoutCallback, direct = false): void {
    this.#ask(new GenerationCheckout(this, callback, undefined, direct));
  }

  /**
   * Checks a client out of this generation for one of the pool's waiters, answered through
   * the hooks' `answerWaiter`; the caller must have checked {@link hasCapacity}. A failed
   * connect may be taken over (`onConnectFailed` gets the waiter).
   */
  checkoutFor(waiter: object): void {
    this.#ask(new GenerationCheckout(this, undefined, waiter, false));
  }

  #ask(checkout: GenerationCheckout): void {
    this.outstanding++;
    this.#unanswered++;
    try {
      this.pool.checkout(checkout);
    } catch (error) {
      // pg-pool throws out of its connect when its Client cannot be built (an invalid
      // connection string): the caller gets the throw, as from pg.Pool, and nothing is
      // owed. (A client class that answers at once may make the caller's own callback
      // throw through here: that checkout was settled already.)
      if (!checkout.answered) {
        this.outstanding--;
        this.#answered();
      }
      throw error;
    }
  }

  /** One checkout asked of pg-pool was answered (or never asked): the drain may go on once all are. */
  #answered(): void {
    if (--this.#unanswered === 0) this.#allAnswered?.();
  }

  /**
   * pg-pool answered `checkout` (see {@link GenerationCheckout}): hand the client over, or
   * report the failed connect.
   */
  answer(
    checkout: GenerationCheckout,
    err: Error | undefined,
    client: pg.PoolClient | undefined,
    pgRelease: PgRelease | undefined,
  ): void {
    this.#answered();
    if (err !== undefined || client === undefined) {
      const error = err ?? new Error('hotload-pg: checkout returned no client');
      this.outstanding--;
      const { direct } = checkout;
      if (!direct) this.hooks.onError?.(this, error);
      if (direct || !this.hooks.onConnectFailed(this, error, checkout.requester ?? checkout.waiter!)) {
        this.#reply(checkout, error, undefined, noop);
      }
      this.hooks.onCheckin(this);
      return;
    }
    // pg-pool hands a client with its release function, and has set `client.release` to it
    // already (see generation-pg-pool.ts).
    const release = pgRelease as PgRelease;
    (client as TrackedClient)[pgReleaseOf] = release;
    if (this.#forceClosedError !== undefined) {
      // Connected after this generation's drain timeout ran out: refuse it at once.
      release(true);
      this.#reply(checkout, this.#forceClosedError, undefined, noop);
      return;
    }
    this.#reply(checkout, undefined, client, release);
  }

  /** Answers whoever asked for `checkout`: the caller's callback, or the pool for its waiter. */
  #reply(
    checkout: GenerationCheckout,
    err: Error | undefined,
    client: pg.PoolClient | undefined,
    release: PgRelease,
  ): void {
    const { requester } = checkout;
    if (requester !== undefined) requester(err, client, release);
    else this.hooks.answerWaiter(checkout.waiter!, err, client, release);
  }

  /**
   * A release of one of this generation's clients, before pg-pool takes it back (see
   * {@link ReleaseObserver}). Returns true when there is nothing to do after.
   */
  beforeGiveBack(client: pg.PoolClient, err: Error | boolean | undefined): boolean {
    const tracked = client as TrackedClient;
    // pg-pool's own checkouts (an idle client past its lifetime, one acquired for a
    // checkout that had timed out) were never handed out by this generation.
    if (tracked[pgReleaseOf] === undefined) return true;
    tracked[pgReleaseOf] = undefined;
    this.outstanding--;
    // The force close's own give-back carries its ForceClosedError: not the client's failure.
    if (err instanceof Error && !isForceClosed(client)) this.hooks.onError?.(this, err);
    if (!err && this.pool.idleCount === 0 && this.pool.totalCount >= this.max) {
      // Full and nothing idle: a checkout asked of pg-pool now only joins its queue, so
      // serve the owner's waiters first and then give the client back. pg-pool's release
      // then hands this very client to that waiter synchronously (its own waiter path),
      // instead of idling it, arming and clearing an idle timer and serving the waiter
      // on a later tick. pg-pool still decides whether the client is reused (maxUses,
      // lifetime, broken connection) and emits release/acquire as it always does.
      this.hooks.onCheckin(this);
      return true;
    }
    // Otherwise give it back first: with room or idle clients, a checkout asked before the
    // release would open a new connection (even while growth is paused) instead of reusing one.
    return false;
  }

  /** After pg-pool has taken back a client this generation handed out (see {@link beforeGiveBack}). */
  afterGiveBack(client: pg.PoolClient): void {
    // If pg-pool ended the client instead (released with an error, maxUses, lifetime, broken:
    // it calls the client's end(), which sets pg's `_ending`, the flag pg-pool itself reads),
    // it serves its waiters once the socket has closed, after 'remove': ours are served then
    // too, so a waiter's new connection comes after the old one's remove and never makes
    // max + 1 sockets (the 'remove' listener serves them). The slot is free at once, as
    // pg-pool's is for a checkout asked meanwhile. A client whose socket was gone already
    // has been removed synchronously, and served them then.
    if ((client as EndingClient)._ending !== true) this.hooks.onCheckin(this);
  }

  /**
   * Drains the generation: idle clients close at once, checked-out ones when released
   * (pg-pool's own `end()`); resolves when the last socket is gone. Idempotent. The drain
   * deadline is the lifecycle manager's: it force-closes what {@link Generation.inUse} lists.
   */
  drain(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /** Closes a candidate that never served, at once: checked-out and connecting clients included. */
  discard(): Promise<void> {
    const error = new ForceClosedError(this.id, 0);
    for (const client of this.inUse()) this.forceClose(client, error);
    return this.drain();
  }

  /** Clients checked out, and clients still connecting (pg-pool lists them before 'connect'). */
  inUse(): pg.PoolClient[] {
    const clients: pg.PoolClient[] = [];
    for (const client of this.#clients) if (client[pgReleaseOf] !== undefined) clients.push(client);
    for (const client of clientsOf(this.pool)) {
      if (!this.#clients.has(client as TrackedClient)) clients.push(client);
    }
    return clients;
  }

  /**
   * Closes one client of {@link Generation.inUse} under its holder: what the holder does next fails
   * with `error`, and the server is asked to cancel its query. A client still connecting
   * has its socket destroyed (a handshake the server never answers would otherwise hold
   * the drain forever). Clients that connect from now on are refused with `error`.
   */
  forceClose(client: pg.PoolClient, error: ForceClosedError): void {
    this.#forceClosedError ??= error;
    const tracked = client as TrackedClient;
    if (!this.#clients.has(tracked)) {
      tracked.connection.stream.destroy(error);
      return;
    }
    const pgRelease = tracked[pgReleaseOf];
    if (pgRelease === undefined || isForceClosed(tracked)) return; // given back meanwhile
    // Through pg-pool's release (see generation-pg-pool.ts), which lets this one call through.
    forceCloseClient(tracked, error, () => pgRelease(error));
  }

  async #close(): Promise<void> {
    // A checkout pg-pool has not answered yet must be answered before its end(): once
    // ending, pg-pool never serves its queue. One may be queued for a tick (an idle client
    // is handed over on the next tick) or until a released client that pg-pool does not
    // reuse (maxUses, lifetime, broken) has closed (see #giveBack).
    if (this.#unanswered > 0) await new Promise<void>((resolve) => (this.#allAnswered = resolve));
    clearTimeout(this.#growthTimer);
    await this.pool.end();
    // pg-pool's end() resolves once its clients are *asked* to end; a generation is closed
    // when their sockets are, so nothing of it outlives the pool's end().
    if (this.#clients.size > 0) await new Promise<void>((resolve) => (this.#lastRemoved = resolve));
    this.drained = true;
    this.hooks.onClosed(this);
  }
}
