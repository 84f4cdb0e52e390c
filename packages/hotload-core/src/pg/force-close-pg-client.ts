import { type CancelTarget, type PgWireModule, sendCancelRequest } from './cancel-request.js';

/** The parts of a `pg.Client` a force-close touches (structural: hotload-core does not load pg). */
export interface ForceClosablePgClient extends CancelTarget {
  /** The client's wire connection; its socket is destroyed with the force-close error. */
  readonly connection: { readonly stream: { destroy(error?: Error): void } };
  /**
   * pg's `client.on('error')`: the force-close adds a listener that absorbs the error pg emits
   * when the socket dies.
   */
  on(event: 'error', listener: (error: Error) => void): unknown;
  /** pg's `client.once('end')`: the force-close runs `onClosed` on it. */
  once(event: 'end', listener: () => void): unknown;
}

/**
 * Closes a checked-out `pg.Client` under its holder so that whatever the holder does next
 * fails with `error` (a clear hotload error), never with a crash or a hang:
 *
 * - a cancel request stops the query the server runs for it (see {@link sendCancelRequest});
 * - the socket is destroyed *with* `error`, so pg fails the query in flight (and any
 *   queued one) with it;
 * - later `client.query()` calls fail with it too (promise, callback or submittable);
 * - the client's own `error` event is absorbed: pg emits one when the socket dies, and a
 *   checked-out client usually has no listener, which would crash the process.
 *
 * `onClosed` runs once the connection has ended.
 */
export function forceClosePgClient(
  client: ForceClosablePgClient,
  error: Error,
  pg: PgWireModule,
  onClosed: () => void = () => {},
): void {
  sendCancelRequest(client, pg);
  client.on('error', () => {});
  // An own property shadows the prototype's query for this one dead client only.
  Object.defineProperty(client, 'query', { value: failingQuery(error), configurable: true, writable: true });
  client.once('end', onClosed);
  client.connection.stream.destroy(error);
}

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
