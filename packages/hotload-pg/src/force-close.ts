import { type ForceClosablePgClient, forceClosePgClient, type PgWireModule } from 'hotload-core';
import pg from 'pg';

// A flag on the client itself: checked on every release, so a property read rather than
// a WeakSet lookup.
const forceClosed = Symbol('hotload-pg.forceClosed');

/** True once {@link forceCloseClient} closed `client`. */
export function isForceClosed(client: pg.PoolClient): boolean {
  return (client as { [forceClosed]?: boolean })[forceClosed] === true;
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
  (client as { [forceClosed]?: boolean })[forceClosed] = true;
  forceClosePgClient(
    client as unknown as ForceClosablePgClient,
    error,
    pg as unknown as PgWireModule,
    onClosed,
  );
}
