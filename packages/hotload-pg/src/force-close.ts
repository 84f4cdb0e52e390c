import { type ForceClosablePgClient, forceClosePgClient, type PgWireModule } from 'hotload-core';
import pg from 'pg';

/**
 * Where a force close of a client is: `closing` until its connection has ended (the
 * holder's release then does nothing: the force close gives the client back), `closed`
 * once it has (the force close is giving it back, or has).
 */
export type ForceCloseState = 'closing' | 'closed';

// A flag on the client itself: read on every release, so a property read rather than
// a WeakMap lookup.
const forceClosed = Symbol('hotload-pg.forceClosed');
type FlaggedClient = { [forceClosed]?: ForceCloseState };

/** Where {@link forceCloseClient} is with `client` (undefined: never force-closed). */
export function forceCloseState(client: pg.PoolClient): ForceCloseState | undefined {
  return (client as FlaggedClient)[forceClosed];
}

/** True once {@link forceCloseClient} closed `client`. */
export function isForceClosed(client: pg.PoolClient): boolean {
  return forceCloseState(client) !== undefined;
}

/**
 * Closes a checked-out client under its holder so that whatever the holder does next fails
 * with `error` (a clear hotload error), never with a crash or a hang: hotload-core's
 * `forceClosePgClient`, shared with hotload-knex and the generic pool. It also sends a
 * cancel request, so the query the server runs for the client stops too.
 *
 * `onClosed` runs once the connection has ended (then the client can go back to its pool
 * to be removed, after pg has finished reporting the error to the holder).
 */
export function forceCloseClient(client: pg.PoolClient, error: Error, onClosed: () => void): void {
  const flagged = client as FlaggedClient;
  flagged[forceClosed] = 'closing';
  forceClosePgClient(client as unknown as ForceClosablePgClient, error, pg as unknown as PgWireModule, () => {
    flagged[forceClosed] = 'closed';
    onClosed();
  });
}
