import type pg from 'pg';

// A flag on the client itself: checked on every release, so a property read rather than
// a WeakSet lookup.
const forceClosed = Symbol('hotload-pg.forceClosed');

/** True once {@link forceCloseClient} closed `client`. */
export function isForceClosed(client: pg.PoolClient): boolean {
  return (client as { [forceClosed]?: boolean })[forceClosed] === true;
}

/**
 * Closes a checked-out client under its holder so that whatever the holder does next fails
 * with `error` (a clear hotload error), never with a crash or a hang:
 *
 * - the socket is destroyed *with* `error`, so pg fails the query in flight (and any
 *   queued one) with it;
 * - later `client.query()` calls fail with it too (promise, callback or submittable);
 * - the client's own `error` event is absorbed here: pg emits one when the socket dies,
 *   and a checked-out client usually has no listener, which would crash the process.
 *
 * `onClosed` runs once the connection has ended (then the client can go back to its pool
 * to be removed, after pg has finished reporting the error to the holder).
 */
export function forceCloseClient(client: pg.PoolClient, error: Error, onClosed: () => void): void {
  (client as { [forceClosed]?: boolean })[forceClosed] = true;
  client.on('error', ignoreError);
  // An own property shadows the prototype's query for this one dead client only.
  Object.defineProperty(client, 'query', { value: failingQuery(error), configurable: true, writable: true });
  client.once('end', onClosed);
  client.connection.stream.destroy(error);
}

function ignoreError(): void {}

type QueryCallback = (err: Error) => void;
interface SubmittableLike {
  submit: unknown;
  handleError?: (err: Error) => void;
  callback?: QueryCallback;
}

/** A `client.query` replacement that fails every call form with `error`, as pg does for a dead client. */
function failingQuery(error: Error) {
  return (config: unknown, values?: unknown, callback?: unknown): unknown => {
    if (isSubmittable(config)) {
      process.nextTick(() => {
        config.handleError?.(error);
        config.callback?.(error);
      });
      return config;
    }
    const configCallback =
      typeof config === 'object' && config !== null ? (config as { callback?: unknown }).callback : undefined;
    const cb = [values, callback, configCallback].find((candidate) => typeof candidate === 'function') as
      | QueryCallback
      | undefined;
    if (cb) {
      process.nextTick(cb, error);
      return undefined;
    }
    return Promise.reject(error);
  };
}

function isSubmittable(value: unknown): value is SubmittableLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { submit?: unknown }).submit === 'function'
  );
}
