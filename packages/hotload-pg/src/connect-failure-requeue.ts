import { backoffDelay, type GenerationManager, isCredentialFailure } from 'hotload-core';
import type pg from 'pg';
import type { Generation } from './generation.js';
import type { CheckoutCallback } from './generation-checkout.js';
import type { WaitQueue } from './wait-queue.js';
import type { Waiter } from './waiter.js';

/** What the requeue needs of the pool it works for. */
export interface RequeueOwner {
  /** The pool's wait queue. */
  readonly queue: WaitQueue;
  /** The pool's lifecycle: the serving generation, the credential wait, the retry timings. */
  lifecycle(): GenerationManager<Generation, pg.PoolClient>;
  /** False for a pool without `hotload.source`: its one config never changes, so nothing is waited for. */
  readonly followsSource: boolean;
  /** True once the pool's `end()` was called. */
  ending(): boolean;
}

/**
 * What the pool does when a generation's new connection failed: the request fails too,
 * as with pg.Pool, unless someone else can serve it. That is a newer generation (the
 * failing one is retired), or, for a credential failure (28P01/28000) of the serving
 * generation of a pool with a source, that generation's clients as they are released (if
 * it has any) or the generation of the new secret. That is the password changed in the
 * database a moment before the secret (with or without open clients: an idle service's
 * clients may all have timed out): the lifecycle re-reads the source at once and bounds
 * the wait by `credentialWaitMillis` (`connectionTimeoutMillis` still runs from the
 * checkout); the request waits at the head of the queue, and the generation tries one new
 * connection at a time with backoff meanwhile.
 *
 * hotload-pg's form of core's `checkoutWithCredentialWait` loop: the pool's checkouts are
 * callbacks in a queue, served by whichever comes first (a client given back to the
 * failing generation, or the new generation), as pg-pool serves its own queue.
 */
export class ConnectFailureRequeue {
  /** Credential failures in a row on the serving generation: its growth pause backs off. */
  #credentialFailures = 0;
  /** Waiters whose bounded wait for the new secret has started (once each). */
  readonly #awaitingCredentials = new WeakSet<Waiter>();

  constructor(private readonly owner: RequeueOwner) {}

  /** A new generation serves: its growth pause starts over. */
  servingChanged(): void {
    this.#credentialFailures = 0;
  }

  /**
   * Takes a failed checkout over (true: queued again, or answered already), or leaves it
   * to fail with `err` (false). `request` is the waiter it was served from, if it came
   * from the queue, else the caller's callback.
   */
  takeOver(generation: Generation, err: Error, request: CheckoutCallback | Waiter): boolean {
    const { queue } = this.owner;
    if (this.owner.ending()) return false;
    const lifecycle = this.owner.lifecycle();
    const serving = generation === lifecycle.current;
    if (serving && (!this.owner.followsSource || !isCredentialFailure(err))) return false;
    // A connecting checkout whose time ran out during this connect fails with its error, as
    // pg.Pool's connect would (its timer is pg-pool's, see Waiter.connecting).
    if (typeof request !== 'function' && request.state === 'expired') return false;
    // A checkout that went straight to the generation gets its clock now: its own connect
    // was bounded by connectionTimeoutMillis already (no time is read on that hot path).
    const waiter = typeof request === 'function' ? queue.create(request) : request;
    if (serving) {
      if (!this.#awaitingCredentials.has(waiter)) {
        this.#awaitingCredentials.add(waiter);
        // Resolves on the next promotion (which serves the queue); rejects with `err` at the deadline.
        lifecycle.awaitCredentialChange(generation, err).catch((error: Error) => queue.settle(waiter, error));
      }
      this.#pauseGrowth(generation);
    }
    if (waiter.state === 'settled') return true; // timed out meanwhile: answered already
    queue.add(waiter, true);
    return true;
  }

  /** The failing generation stops opening connections for a backoff that grows with each failure. */
  #pauseGrowth(generation: Generation): void {
    if (!generation.growthPaused) this.#credentialFailures++;
    const { verifyRetryInitialMillis, verifyRetryMaxMillis } = this.owner.lifecycle().options;
    generation.pauseGrowth(
      backoffDelay(this.#credentialFailures, verifyRetryInitialMillis, verifyRetryMaxMillis),
    );
  }
}
