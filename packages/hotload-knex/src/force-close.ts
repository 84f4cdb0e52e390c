/**
 * Closing a raw pg connection under its holder so that everything the holder does next
 * fails with one clear error instead of pg's generic ones:
 *
 * - the socket is destroyed *with* the error, so pg fails the query in flight with it
 *   (`end()` would report "Connection terminated");
 * - later queries on the connection fail with it too (callback, promise and submittable
 *   forms: Knex uses the first and the last), instead of pg's "not queryable";
 * - a cancel request (PostgreSQL's out-of-band cancel, keyed by the backend's process id
 *   and secret key, no login needed) stops the query the server is running for it: a
 *   backend busy with a query only notices its client is gone when it next talks to it,
 *   so without the cancel an old session could outlive the drain by the query's length;
 * - Knex's pg client already listens for the connection's `error` event and marks it
 *   disposed, so the pool destroys it when it comes back.
 */

/** The parts of a `pg.Client` this touches. */
export interface ForceClosable {
  __knex__disposed?: unknown;
  host?: string;
  port?: number;
  processID?: number | null;
  secretKey?: number | null;
  connection?: { stream?: { destroy(error?: Error): void } };
  end(): Promise<void>;
}

/** The part of the pg module a cancel request needs: its wire-protocol `Connection`. */
export interface PgWireModule {
  Connection: new () => PgWireConnection;
}

interface PgWireConnection {
  connect(port: number, host: string): void;
  cancel(processID: number, secretKey: number): void;
  on(event: 'connect' | 'error', listener: () => void): unknown;
  end(): void;
}

/** Closes `connection` under its holder: cancel its query, fail its calls with `error`, drop the socket. */
export function forceCloseConnection(connection: ForceClosable, error: Error, pg: PgWireModule): void {
  sendCancelRequest(connection, pg);
  connection.__knex__disposed = error;
  // An own property shadows pg's `query` for this one dead connection only.
  Object.defineProperty(connection, 'query', {
    value: failingQuery(error),
    configurable: true,
    writable: true,
  });
  const stream = connection.connection?.stream;
  if (stream) stream.destroy(error);
  else void connection.end().catch(() => {});
}

interface Submittable {
  submit: unknown;
  handleError?: (error: Error) => void;
}

/** A `client.query` replacement that fails every call form with `error`, asynchronously as pg does. */
function failingQuery(error: Error) {
  return (config: unknown, values?: unknown, callback?: unknown): unknown => {
    if (typeof (config as Submittable | undefined)?.submit === 'function') {
      process.nextTick(() => (config as Submittable).handleError?.(error));
      return config;
    }
    const done = [values, callback].find((candidate) => typeof candidate === 'function') as
      | ((error: Error) => void)
      | undefined;
    if (done) {
      process.nextTick(done, error);
      return undefined;
    }
    return Promise.reject(error);
  };
}

/** Asks the server to cancel whatever the connection's backend runs (a no-op when idle). */
function sendCancelRequest(connection: ForceClosable, pg: PgWireModule): void {
  const { host, port, processID, secretKey } = connection;
  if (!host || !port || typeof processID !== 'number' || typeof secretKey !== 'number') return;
  const wire = new pg.Connection();
  // Best effort: if the cancel cannot be delivered the socket is still destroyed below.
  wire.on('error', () => {});
  wire.on('connect', () => {
    wire.cancel(processID, secretKey);
    // The server closes a cancel connection itself once it has read the request.
  });
  wire.connect(port, host);
}
