import type pg from 'pg';
import type { PgPoolCheckout, PgRelease } from './generation-pg-pool.js';

/** Callback of a checkout: pg.Pool's `connect` callback shape. */
export type CheckoutCallback = (
  err: Error | undefined,
  client: pg.PoolClient | undefined,
  release: (err?: Error | boolean) => void,
) => void;

/** Who pg-pool's answers to a {@link GenerationCheckout} go to: its generation. */
export interface CheckoutAnswerer {
  /** pg-pool answered `checkout` (with a client, or with the error of a failed connect). */
  answer(
    checkout: GenerationCheckout,
    err: Error | undefined,
    client: pg.PoolClient | undefined,
    release: PgRelease | undefined,
  ): void;
}

/**
 * One checkout a generation asked of its pg-pool, in the place of pg-pool's own pending
 * item: pg-pool answers it by calling its `callback` method (`pendingItem.callback(...)`),
 * and reads and sets its `timedOut`. So what a checkout carries (who asked, whether a
 * failed connect goes straight back, whether it was answered) lives on one object of one
 * shape, with no closure made per checkout (issue 29.1: each new closure also paid V8's
 * lazy-compile stub at its first call).
 *
 * Exactly one of `requester` (a caller's callback) and `waiter` (one of the pool's
 * waiters, answered through the generation's hooks) is set.
 */
export class GenerationCheckout implements PgPoolCheckout {
  /** Set by pg-pool's queue timer (`connectionTimeoutMillis`): a client it acquires later goes back. */
  timedOut = false;
  /** That queue timer, while pg-pool holds the checkout in its queue (see generation-pg-pool.ts). */
  timer: NodeJS.Timeout | undefined = undefined;
  /** True once pg-pool has answered (a throw out of pg-pool's connect then owes nothing). */
  answered = false;

  /**
   * @param answerer the generation, which hands pg-pool's answer on
   * @param requester the caller's callback, or undefined for a waiter
   * @param waiter the pool's waiter the checkout serves, or undefined for a caller's callback
   * @param direct a failed connect goes straight to the requester (verify wants the error)
   */
  constructor(
    readonly answerer: CheckoutAnswerer,
    readonly requester: CheckoutCallback | undefined,
    readonly waiter: object | undefined,
    readonly direct: boolean,
  ) {}

  /** pg-pool's answer (its name is pg-pool's: a pending item's `callback`). */
  callback(err: Error | undefined, client?: pg.PoolClient, release?: PgRelease): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.answered = true;
    this.answerer.answer(this, err, client, release);
  }
}
