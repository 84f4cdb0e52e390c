import type pg from 'pg';
import type { CheckoutCallback } from './generation.js';

/**
 * A checkout the pool itself holds: waiting for capacity or for the first config, or
 * handed to a generation from the queue. Its `connectionTimeoutMillis` timer runs from
 * the checkout call until it is answered (as pg-pool's queue timer does), wherever it is.
 */
export interface Waiter {
  readonly callback: CheckoutCallback;
  timer: NodeJS.Timeout | undefined;
  /** In the queue (so answering it must take it out). */
  queued: boolean;
  /** Answered (served, failed or timed out): a late client goes straight back. */
  settled: boolean;
  /**
   * Asked while there was no generation yet and within `max`: pg.Pool would be opening a
   * connection for it, so its timeout is pg's connection timeout, not the queue's. Once a
   * generation connects for it, that generation's pg-pool times the connection (as pg.Pool
   * would: its error, its `cause`, the client dropped before the callback) and this
   * waiter's own timer only marks it {@link Waiter.expired}.
   */
  readonly connecting: boolean;
  /** A connecting waiter's time ran out while a generation was connecting for it: never queue it again. */
  expired: boolean;
  /** Waiting (bounded by `credentialWaitMillis`) for the new secret after a refused login. */
  awaitingCredentials: boolean;
}

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
 * answered exactly once, by {@link CheckoutQueue.settle}: served, failed or timed out.
 */
export class CheckoutQueue {
  readonly #waiters: Waiter[] = [];

  /** @param timeoutMillis pg's `connectionTimeoutMillis` (0 or undefined: no limit) */
  constructor(private readonly timeoutMillis: number | undefined) {}

  get length(): number {
    return this.#waiters.length;
  }

  /** The waiters in order (for pg-pool's `_pendingQueue` view). */
  get waiters(): readonly Waiter[] {
    return this.#waiters;
  }

  /** A new waiter for `callback`, its `connectionTimeoutMillis` clock started; not queued yet. */
  create(callback: CheckoutCallback, connecting = false): Waiter {
    const waiter: Waiter = {
      callback,
      connecting,
      queued: false,
      timer: undefined,
      settled: false,
      awaitingCredentials: false,
      expired: false,
    };
    if (this.timeoutMillis) {
      const message = connecting ? CONNECTION_TIMEOUT_MESSAGE : CONNECT_TIMEOUT_MESSAGE;
      // pg-pool calls a timed-out queued checkout back with the error alone, a failed
      // connection with (err, undefined, noop).
      const arity = connecting ? 3 : 1;
      waiter.timer = setTimeout(() => {
        // Not queued and not answered: handed to a generation, whose pg-pool answers it.
        if (connecting && !waiter.queued) waiter.expired = true;
        else this.settle(waiter, new Error(message), undefined, noop, arity);
      }, this.timeoutMillis);
      waiter.timer.unref();
    }
    return waiter;
  }

  /** Queues `waiter` at the end, or at the head (`first`) when it has waited already. */
  add(waiter: Waiter, first = false): void {
    waiter.queued = true;
    if (first) this.#waiters.unshift(waiter);
    else this.#waiters.push(waiter);
  }

  /** Takes the first waiter out of the queue (to be served). */
  shift(): Waiter | undefined {
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter.queued = false;
    return waiter;
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
    if (waiter.settled) {
      if (client !== undefined) release(); // answered already (timed out): give it back
      return;
    }
    waiter.settled = true;
    clearTimeout(waiter.timer);
    if (waiter.queued) {
      waiter.queued = false;
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
    }
    if (arity === 1) (waiter.callback as (err: Error | undefined) => void)(err);
    else waiter.callback(err, client, release);
  }

  /** Fails every queued waiter with `error`, on the next tick (as pg-pool does). */
  failAll(error: Error): void {
    for (const waiter of this.#waiters.splice(0)) {
      waiter.queued = false;
      process.nextTick(() => this.settle(waiter, error));
    }
  }
}
