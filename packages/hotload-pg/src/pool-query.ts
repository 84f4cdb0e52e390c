import pg from 'pg';
import type { CheckoutCallback } from './generation-checkout.js';
import type { PgPoolMembers } from './pg-pool-members.js';
import { type NodeCallback, promisify } from './promisify.js';

/** What `pool.query` needs of the pool: a checkout, and pg-pool's `Promise` and `log` members. */
export interface QueryingPool {
  checkout(callback: CheckoutCallback): void;
  readonly members: PgPoolMembers;
}

/** pg's Client#query without its overloads, for the submittable-with-callback form its types omit. */
type LooseQuery = (
  this: pg.PoolClient,
  query: unknown,
  callback: (err: Error | null, result: unknown) => void,
) => unknown;

type QueryCallback = (err: Error | undefined, result?: unknown) => void;

interface SubmittableLike {
  submit: (...args: never[]) => unknown;
  handleError?: (err: Error, ...rest: unknown[]) => unknown;
  once?: (event: string, listener: (...args: never[]) => void) => unknown;
}

/**
 * `pool.query(...)` in all of pg-pool's forms: text (or a config object) with values and
 * a callback or a promise, or a submittable (see {@link querySubmittable}). As pg-pool
 * does, the client goes back once the query is done, a client error while it runs ends it
 * and drops the client, and a function as the first argument is refused on the next tick.
 */
export function poolQuery(pool: QueryingPool, text: unknown, values: unknown, callback: unknown): unknown {
  const { members } = pool;
  if (typeof text === 'function') {
    const response = promisify(members.Promise, text as NodeCallback<never>);
    setImmediate(() =>
      response.callback(
        new Error('Passing a function as the first parameter to pool.query is not supported'),
      ),
    );
    return response.result;
  }
  if (typeof values === 'function') {
    callback = values;
    values = undefined;
  }
  if (isSubmittable(text))
    return querySubmittable(pool, text, (callback || undefined) as QueryCallback | undefined);
  const response = promisify<pg.QueryResult>(members.Promise, callback as QueryCallback | undefined);
  // Named `cb` as in pg-pool: a callback that is not a function is called all the same,
  // and the TypeError it throws ("cb is not a function") reads as pg.Pool's.
  const cb = response.callback;
  pool.checkout((err, client) => {
    if (err !== undefined || client === undefined) return cb(err);
    // As pg-pool does: a client error while the query runs ends it and drops the client.
    let released = false;
    const onError = (clientError: Error): void => {
      if (released) return;
      released = true;
      client.release(clientError);
      cb(clientError);
    };
    client.once('error', onError);
    // pg-pool's log lines for a query (to its `log` option; a no-op by default).
    members.log('dispatching query');
    try {
      client.query(
        text as string,
        values as unknown[],
        (queryError: Error | null, result: pg.QueryResult) => {
          members.log('query dispatched');
          client.removeListener('error', onError);
          if (released) return;
          released = true;
          client.release(queryError as Error); // as is (null too): pg-pool emits it in `release`
          if (queryError) return cb(queryError);
          cb(undefined, result);
        },
      );
    } catch (thrown) {
      client.release(thrown as Error);
      cb(thrown as Error);
    }
  });
  return response.result;
}

/**
 * `pool.query(submittable)` (pg's `Query`, pg-cursor, pg-query-stream, ...): returns the
 * submittable at once (as pg's types declare) and gives the client back when it is done:
 * its `end` event (cursors, also after `close()`), the callback pg's Client hands it
 * (query streams report there), or an error the client hands it (SQL or connection: the
 * client then goes back with that error, as `pool.query` gives back a failed client). As
 * pg-pool does, a client error while it runs is listened to (no crash) and ends it.
 */
function querySubmittable(
  pool: QueryingPool,
  submittable: SubmittableLike,
  cb: QueryCallback | undefined,
): SubmittableLike {
  pool.checkout((err, client) => {
    if (err !== undefined || client === undefined) {
      const error = err ?? new Error('hotload-pg: checkout returned no client');
      submittable.handleError?.(error);
      return cb?.(error);
    }
    let released = false;
    const finish = (error?: Error | null, result?: unknown): void => {
      if (released) return;
      released = true;
      client.removeListener('error', finish);
      client.release(error ?? undefined);
      cb?.(error ?? undefined, result);
    };
    client.once('error', finish);
    submittable.once?.('end', (result?: unknown) => finish(undefined, result));
    afterHandledError(submittable, finish);
    if (submittable instanceof pg.Query) {
      // pg's Client (8.2x) makes a callback given with a Query the Query's own, and the
      // Query then reports its error there instead of its 'error' event (and buffers every
      // row). This pool returns the Query itself rather than a promise, so it gives it none:
      // the Query reports through its own events (or its own callback), never swallowed.
      client.query(submittable);
      return;
    }
    (client.query as LooseQuery).call(client, submittable, finish);
  });
  return submittable;
}

/**
 * Runs `then(err)` after `submittable` has handled an error its client hands it (pg's
 * Client calls `handleError` for a SQL error and for a lost connection). A cursor or a
 * Query with its own callback reports an error there and never emits `end`.
 */
function afterHandledError(submittable: SubmittableLike, then: (err: Error) => void): void {
  const handleError = submittable.handleError;
  if (typeof handleError !== 'function') return;
  submittable.handleError = function handleErrorThenRelease(this: unknown, err: Error, ...rest: unknown[]) {
    try {
      return handleError.call(this, err, ...rest);
    } finally {
      then(err);
    }
  };
}

function isSubmittable(value: unknown): value is SubmittableLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { submit?: unknown }).submit === 'function'
  );
}
