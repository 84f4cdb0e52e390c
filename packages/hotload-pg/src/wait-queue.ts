import Denque from 'denque';
import type pg from 'pg';
import type { Generation } from './generation.js';
import type { CheckoutCallback } from './generation-checkout.js';
import type { Waiter } from './waiter.js';

/** The release function a checkout callback receives. */
type PgRelease = (err?: Error | boolean) => void;

/** pg-pool's error for a checkout not served within `connectionTimeoutMillis`. */
const CONNECT_TIMEOUT_MESSAGE = 'timeout exceeded when trying to connect';
/** pg-pool's error for a new connection not made within `connectionTimeoutMillis`. */
const CONNECTION_TIMEOUT_MESSAGE = 'Connection terminated due to connection timeout';

const noop = (): void => {};

/**
 * The hotload pool's own wait queue, first come first served (pg-pool's `_pendingQueue`
 * plays this part in pg.Pool): checkouts wait here, never inside a generation, so the ones
 * waiting when the config changes are served by the new generation. Each waiter is
 * answered exactly once, by {@link WaitQueue.settle}: served, failed or timed out.
 */
export class WaitQueue {
  /**
   * A double-ended queue (denque, as Redis', MongoDB's and MySQL's clients use): taking
   * the first waiter is O(1), where an array's `shift()` moves every waiter behind it
   * (with 12 waiting, about 250 instructions a served waiter; issue 29.1).
   */
  readonly #waiters = new Denque<Waiter>();

  /** @param timeoutMillis pg's `connectionTimeoutMillis` (0 or undefined: no limit) */
  constructor(private readonly timeoutMillis: number | undefined) {}

  get length(): number {
    return this.#waiters.length;
  }

  /** The waiters in order, a copy (for pg-pool's `_pendingQueue` view). */
  get waiters(): readonly Waiter[] {
    return this.#waiters.toArray();
  }

  /** A new waiter for `callback`, its `connectionTimeoutMillis` clock started; not queued yet. */
  create(callback: CheckoutCallback, connecting = false): Waiter {
    const waiter: Waiter = { callback, connecting, state: 'held', timer: undefined };
    if (this.timeoutMillis) {
      const message = connecting ? CONNECTION_TIMEOUT_MESSAGE : CONNECT_TIMEOUT_MESSAGE;
      // pg-pool calls a timed-out queued checkout back with the error alone, a failed
      // connection with (err, undefined, noop).
      const arity = connecting ? 3 : 1;
      waiter.timer = setTimeout(() => {
        // Handed to a generation, whose pg-pool answers it (see Waiter.connecting).
        if (connecting && waiter.state !== 'queued') waiter.state = 'expired';
        else this.settle(waiter, new Error(message), undefined, noop, arity);
      }, this.timeoutMillis);
      waiter.timer.unref();
    }
    return waiter;
  }

  /** Queues `waiter` at the end, or at the head (`first`) when it has waited already. */
  add(waiter: Waiter, first = false): void {
    waiter.state = 'queued';
    if (first) this.#waiters.unshift(waiter);
    else this.#waiters.push(waiter);
  }

  /** Takes the first waiter out of the queue, handed out (to be served). */
  shift(): Waiter | undefined {
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter.state = 'handedOut';
    return waiter;
  }

  /**
   * Hands waiting checkouts to `generation` while it has room, first come first served.
   * The generation's answer comes back to {@link WaitQueue.settle} through the pool's
   * hooks (one function for every waiter); a failed connect may queue the waiter again
   * (see `ConnectFailureRequeue`), its timer running.
   */
  serve(generation: Generation): void {
    while (this.#waiters.length > 0 && generation.hasCapacity()) {
      const waiter = this.shift()!;
      try {
        generation.checkoutFor(waiter);
      } catch (error) {
        // pg-pool throws out of connect() when its Client cannot be built (an option pg's
        // Client refuses, such as pg 8.23's `sslnegotiation: 'direct'` without TLS). pg.Pool
        // throws that to the caller; this checkout's caller has returned already (it waited
        // for the first config), so it gets the error through its callback or promise.
        // A throw of the caller's own callback (settled already) goes on up, as before.
        if (waiter.state === 'settled') throw error;
        this.settle(waiter, error as Error);
      }
    }
  }

  /**
   * Waiters pg.Pool would count as connecting rather than waiting: before the first
   * config (no `serving` generation), up to `max` of them (it would be connecting a client
   * for each already, and counts them in `totalCount`, not `waitingCount`).
   */
  connectingFirst(serving: Generation | undefined, max: number): number {
    if (serving !== undefined || this.#waiters.length === 0) return 0;
    return Math.min(this.#waiters.length, max);
  }

  /**
   * Answers a waiter once (dropping it from the queue if it is there). `arity` 1: the
   * callback gets the error alone, as pg-pool calls back a timed-out checkout.
   */
  settle(
    waiter: Waiter,
    err: Error | undefined,
    client?: pg.PoolClient,
    release: PgRelease = noop,
    arity = 3,
  ): void {
    if (waiter.state === 'settled') {
      if (client !== undefined) release(); // answered already (timed out): give it back
      return;
    }
    const wasQueued = waiter.state === 'queued';
    waiter.state = 'settled';
    clearTimeout(waiter.timer);
    if (wasQueued) this.#remove(waiter);
    if (arity === 1) (waiter.callback as (err: Error | undefined) => void)(err);
    else waiter.callback(err, client, release);
  }

  /** Takes a queued waiter out of the queue, wherever it is (it timed out or failed). */
  #remove(waiter: Waiter): void {
    const waiters = this.#waiters;
    for (let index = 0; index < waiters.length; index++) {
      if (waiters.peekAt(index) === waiter) {
        waiters.removeOne(index);
        return;
      }
    }
  }

  /** Fails every queued waiter with `error`, on the next tick (as pg-pool does). */
  failAll(error: Error): void {
    const waiting = this.#waiters.toArray();
    this.#waiters.clear();
    for (const waiter of waiting) {
      waiter.state = 'held';
      process.nextTick(() => this.settle(waiter, error));
    }
  }
}
