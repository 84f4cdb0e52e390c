/**
 * What {@link checkoutWithCredentialWait} needs of the lifecycle: a
 * {@link GenerationManager} has all of it.
 */
export interface CredentialWaitLifecycle<Generation> {
  /** The serving generation, if any. */
  readonly current: Generation | undefined;
  /** True once the lifecycle was closed. */
  readonly closed: boolean;
  /** The serving generation; before the first one, waits for it (or fails fast with the source's error). */
  whenServing(): Promise<Generation>;
  /** A connection of `generation` failed with `error` (a refused login re-reads the source). */
  reportError(generation: Generation, error: Error): void;
  /** The generation to retry on after `error` on `generation`, or a rejection with `error`. */
  awaitCredentialChange(generation: Generation, error: Error): Promise<Generation>;
}

/** What one driver does inside the loop of {@link checkoutWithCredentialWait}. */
export interface CredentialWaitCheckout<Generation, Checkout> {
  /**
   * Checks out of `generation`: opens or takes a connection, acquires a client, runs a
   * call. A checkout at hand (a kept connection) may be returned as is: it is then judged
   * by {@link CredentialWaitCheckout.keep} in the same tick.
   */
  checkout(generation: Generation): Checkout | Promise<Checkout>;
  /**
   * The generation of the first attempt; by default the serving one (waiting for the first).
   * Later attempts always go to the serving one.
   */
  readonly from?: Generation;
  /**
   * Whether a failure may lead to another attempt at all (by default every `Error`; a
   * thrown non-`Error` always fails the loop as it is). A failure not retried is not
   * reported either: it is the caller's, as it is.
   */
  retryable?(error: Error): boolean;
  /**
   * Called with each checkout that succeeded: true keeps it (the loop returns it), false
   * means the driver gave it back (the generation was replaced while it connected) and the
   * loop checks out of the serving generation again. By default every checkout is kept.
   */
  keep?(checkout: Checkout, generation: Generation): boolean | Promise<boolean>;
}

/**
 * The one loop every driver needs around a checkout: check out from the serving
 * generation; when that fails, report the error to the lifecycle (a refused login
 * re-reads the source, a failover signal re-selects the host) and ask it for the
 * generation to retry on ({@link GenerationManager.awaitCredentialChange}): a newer
 * generation at once when the failing one was replaced meanwhile, or, after a login
 * refused for its credentials (SQLSTATE 28P01/28000: the password changed in the database
 * a moment before the secret), the new secret's generation, waiting at most
 * `credentialWaitMillis`. When there is none the checkout fails with its own error, as the
 * library alone would.
 *
 * Written once here because every driver needs exactly this loop (as Kysely keeps one
 * helper for the loop every dialect would otherwise repeat): the rules of when to wait,
 * how long, and what to retry on are the lifecycle's, never a driver's.
 *
 * @example
 * ```ts
 * const client = await checkoutWithCredentialWait(manager, {
 *   checkout: (generation) => generation.acquire(),
 *   keep: async (client, generation) => {
 *     if (!generation.retired) return true;
 *     await generation.release(client); // replaced while it connected: take one of the new
 *     return false;
 *   },
 * });
 * ```
 */
export async function checkoutWithCredentialWait<Generation, Checkout>(
  lifecycle: CredentialWaitLifecycle<Generation>,
  driver: CredentialWaitCheckout<Generation, Checkout>,
): Promise<Checkout> {
  let generation = driver.from ?? lifecycle.current ?? (await lifecycle.whenServing());
  for (;;) {
    let checkout: Checkout;
    try {
      const pending = driver.checkout(generation);
      checkout = pending instanceof Promise ? await pending : pending;
    } catch (error) {
      if (!(error instanceof Error) || !(driver.retryable?.(error) ?? true)) throw error;
      lifecycle.reportError(generation, error);
      // Resolves with the generation to retry on; rejects with `error` when there is none.
      await lifecycle.awaitCredentialChange(generation, error);
      generation = lifecycle.current ?? (await lifecycle.whenServing());
      continue;
    }
    if (driver.keep === undefined || (await driver.keep(checkout, generation))) return checkout;
    generation = lifecycle.current ?? (await lifecycle.whenServing());
  }
}
