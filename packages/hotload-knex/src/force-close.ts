/**
 * Closing a raw pg connection under its holder so that everything the holder does next
 * fails with one clear error instead of pg's generic ones. hotload-pg's
 * `forceCloseClient` does the closing:
 *
 * - the socket is destroyed *with* the error, so pg fails the query in flight with it
 *   (`end()` would report "Connection terminated");
 * - later queries on the connection fail with it too (callback, promise and submittable
 *   forms: Knex uses the first and the last), instead of pg's "not queryable".
 *
 * What Knex adds:
 *
 * - a cancel request (PostgreSQL's out-of-band cancel, keyed by the backend's process id
 *   and secret key, no login needed) stops the query the server is running for it: a
 *   backend busy with a query only notices its client is gone when it next talks to it,
 *   so without the cancel an old session could outlive the drain by the query's length;
 * - the connection is marked disposed for Knex (its pg client also does that on the
 *   connection's `error` event), so the pool destroys it when it comes back.
 */
import { forceCloseClient } from 'hotload-pg';

/** The parts of a `pg.Client` this touches. */
export interface ForceClosable {
  __knex__disposed?: unknown;
  host?: string;
  port?: number;
  processID?: number | null;
  secretKey?: number | null;
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
  // A raw Knex connection is a pg.Client: the pool is Knex's, so nothing waits for the end.
  forceCloseClient(connection as unknown as Parameters<typeof forceCloseClient>[0], error, () => {});
}

/** Asks the server to cancel whatever the connection's backend runs (a no-op when idle). */
function sendCancelRequest(connection: ForceClosable, pg: PgWireModule): void {
  const { host, port, processID, secretKey } = connection;
  if (!host || !port || typeof processID !== 'number' || typeof secretKey !== 'number') return;
  const wire = new pg.Connection();
  // Best effort: if the cancel cannot be delivered the socket is still destroyed.
  wire.on('error', () => {});
  wire.on('connect', () => {
    wire.cancel(processID, secretKey);
    // The server closes a cancel connection itself once it has read the request.
  });
  wire.connect(port, host);
}
