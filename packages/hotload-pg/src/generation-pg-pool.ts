/**
 * The pg-pool a generation pools with: `pg.Pool` itself, with one private member of
 * pg-pool replaced, `_releaseOnce(client, idleListener)`. pg-pool calls it once per
 * checkout (`_acquireClient`) for the release function it sets as `client.release` and
 * hands to the checkout's callback; that function calls `_release(client, idleListener,
 * err)` once and throws on a second call. Here it does the same, and also tells the
 * generation before and after pg-pool takes the client back (see {@link ReleaseObserver}),
 * and lets the holder of a force-closed client call it again harmlessly.
 *
 * Why not a wrapper around pg-pool's release, as before: that was a second closure per
 * checkout, stored on the client over pg-pool's, plus its call chain: about half of what
 * hotload added to a checkout (issue 29.1, `bench/instructions.bench.ts`). This one
 * replaces pg-pool's closure rather than adding one.
 *
 * A generation also asks for its checkouts through {@link GenerationPgPool.checkout}
 * rather than `connect(callback)`: pg-pool's `connect` made a pending item around a
 * callback, so a generation had to make a closure per checkout to know which checkout an
 * answer was for. `checkout` is pg-pool's `connect` for a pending item the generation
 * makes itself (see generation-checkout.ts), line for line: the same queue, the same
 * `_pulseQueue` on the next tick when a client is idle, the same queue timeout, the same
 * `newClient` otherwise. pg-pool answers it as it answers its own pending items.
 *
 * These members exist under these names and signatures in every pg-pool of pg 8 (3.6 to
 * 3.14). If a pg-pool renamed `_releaseOnce`, its own would run: releases would still
 * work, but the generation would not hear of them (its checkout count would only grow and
 * it would stop serving). So the first generation checks that the application's pg-pool
 * has them and hands out `_releaseOnce`'s function (see {@link assertPgPoolInternals}),
 * and refuses to start with an error naming them if not.
 */
import type { EventEmitter } from 'node:events';
import pg from 'pg';
import { forceCloseState } from './force-close.js';

/** The release function pg-pool hands with a checkout. */
export type PgRelease = (err?: Error | boolean) => void;

/** What the generation is told of each release of one of its clients. */
export interface ReleaseObserver {
  /**
   * Before pg-pool takes `client` back. Returns true when nothing is to be done after
   * (see {@link afterGiveBack}).
   */
  beforeGiveBack(client: pg.PoolClient, err: Error | boolean | undefined): boolean;
  /** After pg-pool has taken `client` back (idled it, or started ending it). */
  afterGiveBack(client: pg.PoolClient): void;
}

/**
 * A checkout in pg-pool's queue, in the place of pg-pool's pending item: pg-pool calls its
 * `callback` as a method once (with a client, or the error of a failed connect) unless
 * `timedOut` was set; answering it clears `timer`.
 */
export interface PgPoolCheckout {
  timedOut: boolean;
  /** The queue timer {@link GenerationPgPool.checkout} armed (`connectionTimeoutMillis`). */
  timer: NodeJS.Timeout | undefined;
  callback(err: Error | undefined, client?: pg.PoolClient, release?: PgRelease): void;
}

/** pg-pool's private members used here (pg's typings do not declare them). */
interface PgPoolInternals {
  _release(client: pg.PoolClient, idleListener: unknown, err: Error | boolean | undefined): void;
  _isFull(): boolean;
  _pulseQueue(): void;
  newClient(pending: PgPoolCheckout): void;
  readonly _idle: readonly unknown[];
  readonly _pendingQueue: PgPoolCheckout[];
}

/** Members of pg-pool's prototype {@link GenerationPgPool} calls. */
const PROTOTYPE_MEMBERS = ['_releaseOnce', '_release', '_isFull', '_pulseQueue', 'newClient'] as const;

/** pg-pool's messages, word for word. */
const ENDED_MESSAGE = 'Cannot use a pool after calling end on the pool';
const QUEUE_TIMEOUT_MESSAGE = 'timeout exceeded when trying to connect';
const DOUBLE_RELEASE_MESSAGE = 'Release called on client which has already been released to the pool.';

let internalsChecked = false;

const noop = (): void => {};

/** pg-pool's events of every checkout (see {@link GenerationPgPool.emit}). */
const CHECKOUT_EVENTS: ReadonlySet<string | symbol> = new Set(['acquire', 'release']);

/**
 * Throws unless pg-pool (the application's copy, through its pg) has the members
 * {@link GenerationPgPool} relies on: `_release`, and `_releaseOnce`, called by
 * `_acquireClient` for every checkout's release function; `_isFull`, `_pulseQueue` and
 * `newClient`, which its `checkout` calls as pg-pool's `connect` does. Checked once per
 * process: a pg-pool without them would otherwise run its own release, unseen by the
 * generation, or fail on the first checkout.
 */
export function assertPgPoolInternals(): void {
  if (internalsChecked) return;
  const prototype = pg.Pool.prototype as unknown as Record<string, unknown>;
  const acquire = prototype._acquireClient;
  const usesReleaseOnce = typeof acquire === 'function' && String(acquire).includes('_releaseOnce(');
  if (PROTOTYPE_MEMBERS.some((name) => typeof prototype[name] !== 'function') || !usesReleaseOnce) {
    throw new Error(
      "hotload-pg: this pg's pg-pool lacks _releaseOnce/_release used by _acquireClient, or _isFull/_pulseQueue/newClient, which hotload-pg checks clients out and observes releases through; use pg >=8.11 <9 (pg-pool 3.6 to 3.14)",
    );
  }
  internalsChecked = true;
}

/** A generation's `pg.Pool`: pg's own, its releases observed (see the file's header). */
export class GenerationPgPool extends pg.Pool {
  readonly #observer: ReleaseObserver;
  /** pg-pool's `_pulseQueue` bound once, for the next tick (pg-pool's `connect` makes a closure each time). */
  readonly #pulseQueue: () => void;
  /** True once anything listens to `acquire` or `release` (see {@link emit}). */
  #checkoutEventsHeard = false;

  constructor(config: pg.PoolConfig, observer: ReleaseObserver) {
    assertPgPoolInternals();
    super(config);
    this.#observer = observer;
    const internals = this as unknown as PgPoolInternals;
    this.#pulseQueue = () => internals._pulseQueue();
    // Every way of adding a listener emits `newListener` first. Never unset: a listener
    // removed later only costs an emit nobody hears, as it would anyway.
    (this as EventEmitter).on('newListener', (event: string | symbol) => {
      if (CHECKOUT_EVENTS.has(event)) this.#checkoutEventsHeard = true;
    });
  }

  /**
   * EventEmitter's `emit`, except that `acquire` and `release`, which pg-pool emits at
   * every checkout, return false at once while nothing listens to them (what `emit` returns
   * then too): the hotload pool listens to them only once a program does (see
   * generation-set.ts). Node's shared `emit` reads each emitter's listeners through
   * megamorphic inline caches in a process with hotload's many emitter shapes, about 250
   * instructions per event (issue 29.1); this check reads one field of this class.
   */
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (!this.#checkoutEventsHeard && (event === 'acquire' || event === 'release')) return false;
    return super.emit(event, ...args);
  }

  /**
   * pg-pool's `connect(callback)` for `checkout`, which stands for the pending item pg-pool
   * would make around the callback (see the file's header): queued when the pool is full
   * or a client is idle (pg-pool's `_pulseQueue` hands the idle one over on the next tick),
   * else a new client connects for it. Throws what pg-pool's `newClient` throws (a Client
   * that cannot be built), as `connect` does.
   */
  checkout(checkout: PgPoolCheckout): void {
    const internals = this as unknown as PgPoolInternals;
    if (this.ending) {
      checkout.callback(new Error(ENDED_MESSAGE), undefined, noop);
      return;
    }
    const idle = internals._idle.length > 0;
    if (!idle && !internals._isFull()) {
      internals.newClient(checkout);
      return;
    }
    if (idle) process.nextTick(this.#pulseQueue);
    const timeoutMillis = this.options.connectionTimeoutMillis;
    if (timeoutMillis) {
      checkout.timer = setTimeout(expireQueued, timeoutMillis, internals._pendingQueue, checkout);
      checkout.timer.unref();
    }
    internals._pendingQueue.push(checkout);
  }

  /** pg-pool's `_releaseOnce`, the generation told before and after (see the file's header). */
  _releaseOnce(client: pg.PoolClient, idleListener: unknown): PgRelease {
    let released = false;
    return (err) => {
      const forceClosed = forceCloseState(client);
      if (released) {
        // The holder of a force-closed client may still call release(): that is expected.
        if (forceClosed !== undefined) return;
        throw new Error(DOUBLE_RELEASE_MESSAGE);
      }
      // The holder's call while its client is being force-closed: the force close gives
      // it back to pg-pool once its socket is gone.
      if (forceClosed === 'closing') return;
      released = true;
      const nothingAfter = this.#observer.beforeGiveBack(client, err);
      (this as unknown as PgPoolInternals)._release(client, idleListener, err);
      if (!nothingAfter) this.#observer.afterGiveBack(client);
    };
  }
}

/** pg-pool's queue timeout of a checkout: out of the queue, answered with pg-pool's error alone. */
function expireQueued(queue: PgPoolCheckout[], checkout: PgPoolCheckout): void {
  const index = queue.indexOf(checkout);
  if (index !== -1) queue.splice(index, 1);
  checkout.timedOut = true;
  checkout.callback(new Error(QUEUE_TIMEOUT_MESSAGE));
}
