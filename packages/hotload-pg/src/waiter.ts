import type { CheckoutCallback } from './generation-checkout.js';

/**
 * Where a {@link Waiter} is, one state at a time:
 *
 * - `held`: outside the queue and not handed out: just made (queued in the same tick), or
 *   taken out of the queue to be failed on the next tick (`end()`);
 * - `queued`: in the pool's wait queue (answering it takes it out);
 * - `handedOut`: handed to a generation, whose pg-pool answers it (or fails its connect,
 *   and the pool may queue it again);
 * - `expired`: a {@link Waiter.connecting} waiter whose time ran out while handed out: the
 *   generation's pg-pool answers it with pg's own timeout, and it is never queued again;
 * - `settled`: answered (served, failed or timed out): a late client goes straight back.
 */
export type WaiterState = 'held' | 'queued' | 'handedOut' | 'expired' | 'settled';

/**
 * A checkout the pool itself holds: waiting for capacity or for the first config, or
 * handed to a generation from the queue. Its `connectionTimeoutMillis` timer runs from
 * the checkout call until it is answered (as pg-pool's queue timer does), wherever it is.
 */
export interface Waiter {
  readonly callback: CheckoutCallback;
  /**
   * Asked while there was no generation yet and within `max`: pg.Pool would be opening a
   * connection for it, so its timeout is pg's connection timeout, not the queue's. Once a
   * generation connects for it, that generation's pg-pool times the connection (as pg.Pool
   * would: its error, its `cause`, the client dropped before the callback) and this
   * waiter's own timer only makes it `expired`. Fixed when it is made.
   */
  readonly connecting: boolean;
  /** See {@link WaiterState}; changed only by the wait queue. */
  state: WaiterState;
  /** Its `connectionTimeoutMillis` timer (none without a timeout). */
  timer: NodeJS.Timeout | undefined;
}
