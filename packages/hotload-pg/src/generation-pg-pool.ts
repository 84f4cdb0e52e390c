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
 * Both members exist under these names and signatures in every pg-pool of pg 8 (3.6 to
 * 3.14). If a pg-pool renamed `_releaseOnce`, its own would run: releases would still
 * work, but the generation would not hear of them (its checkout count would only grow and
 * it would stop serving). So the first generation checks that the application's pg-pool
 * has both members and hands out `_releaseOnce`'s function (see
 * {@link assertPgPoolInternals}), and refuses to start with an error naming them if not.
 */
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

/** pg-pool's private members used here (pg's typings do not declare them). */
interface PgPoolInternals {
  _release(client: pg.PoolClient, idleListener: unknown, err: Error | boolean | undefined): void;
}

/** pg-pool's message, word for word. */
const DOUBLE_RELEASE_MESSAGE = 'Release called on client which has already been released to the pool.';

let internalsChecked = false;

/**
 * Throws unless pg-pool (the application's copy, through its pg) has the members
 * {@link GenerationPgPool} relies on: `_release`, and `_releaseOnce`, called by
 * `_acquireClient` for every checkout's release function. Checked once per process: a
 * pg-pool without them would otherwise run its own release, unseen by the generation.
 */
export function assertPgPoolInternals(): void {
  if (internalsChecked) return;
  const prototype = pg.Pool.prototype as unknown as Record<string, unknown>;
  const acquire = prototype._acquireClient;
  const usesReleaseOnce = typeof acquire === 'function' && String(acquire).includes('_releaseOnce(');
  if (
    typeof prototype._releaseOnce !== 'function' ||
    typeof prototype._release !== 'function' ||
    !usesReleaseOnce
  ) {
    throw new Error(
      "hotload-pg: this pg's pg-pool has no _releaseOnce/_release used by _acquireClient, which hotload-pg observes releases through; use pg >=8.11 <9 (pg-pool 3.6 to 3.14)",
    );
  }
  internalsChecked = true;
}

/** A generation's `pg.Pool`: pg's own, its releases observed (see the file's header). */
export class GenerationPgPool extends pg.Pool {
  readonly #observer: ReleaseObserver;

  constructor(config: pg.PoolConfig, observer: ReleaseObserver) {
    assertPgPoolInternals();
    super(config);
    this.#observer = observer;
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
