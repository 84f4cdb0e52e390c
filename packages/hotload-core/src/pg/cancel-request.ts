/** The part of the pg module a cancel request needs: its wire-protocol `Connection`. */
export interface PgWireModule {
  /** pg's wire-protocol `Connection` class (`pg.Connection`): a cancel request is sent on a new one. */
  Connection: new () => PgWireConnection;
}

interface PgWireConnection {
  connect(port: number, host: string): void;
  cancel(processID: number, secretKey: number): void;
  on(event: 'connect' | 'error', listener: () => void): unknown;
}

/** Where a pg client's backend runs and its cancel key (pg's `Client` has these fields). */
export interface CancelTarget {
  /** The host of the client's backend (pg's `client.host`). */
  host?: string;
  /** The port of the client's backend (pg's `client.port`). */
  port?: number;
  /** The backend's process id (pg's `client.processID`); without it no cancel request is sent. */
  processID?: number | null;
  /** The backend's cancel key (pg's `client.secretKey`); without it no cancel request is sent. */
  secretKey?: number | null;
}

/**
 * Asks the server to cancel whatever the client's backend runs (a no-op when idle):
 * PostgreSQL's out-of-band cancel, keyed by the backend's process id and secret key, no
 * login needed. A backend busy with a query only notices its client is gone when it next
 * talks to it, so without this a force-closed session could outlive the drain by the
 * query's length. Best effort: if it cannot be delivered, nothing else depends on it.
 * Takes the pg module as a parameter, so hotload-core does not load pg.
 */
export function sendCancelRequest(target: CancelTarget, pg: PgWireModule): void {
  const { host, port, processID, secretKey } = target;
  if (!host || !port || typeof processID !== 'number' || typeof secretKey !== 'number') return;
  const wire = new pg.Connection();
  wire.on('error', () => {});
  // The server closes a cancel connection itself once it has read the request.
  wire.on('connect', () => wire.cancel(processID, secretKey));
  wire.connect(port, host);
}
