/**
 * Seeing a postgres.js query run, cancelling it, and running it again on another
 * `postgres()` instance.
 *
 * postgres.js (3.x, src/query.js) has no public hooks for these. A `Query` keeps, as own
 * properties: `handler` (the instance's dispatcher, called once when the query runs:
 * queue it, or send it on a connection), `resolve` and `reject` (what a connection calls
 * with the query's outcome, before its promise settles; replaced per step while a cursor
 * is iterated) and `canceller` (the instance's cancel, which `query.cancel()` calls).
 * Wrapping them observes a query that runs (a fragment nested in another query never
 * does); re-pointing `handler`/`canceller` to another instance's (taken from a query made
 * there and never run: postgres.js queries are lazy) and calling the handler sends the
 * very same query there, with every modifier the holder applied (`.values()`, `.raw()`,
 * `.simple()`, `.describe()`, `.forEach()`, ...). If these members vanish,
 * {@link asQueryHandle} returns `undefined`: the query is neither tracked, cancelled nor
 * retried, and fails as postgres.js fails it.
 */
import type postgres from 'postgres';

/** The members of a postgres.js `Query` used here. */
interface QueryInternals {
  handler: (query: QueryInternals) => void;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** The instance's cancel, as `query.cancel()` calls it (once), returning its promise. */
  canceller: ((query: QueryInternals) => Promise<void>) | null;
}

/** One postgres.js query, seen through the members above. */
export interface QueryHandle {
  /** Calls `sent` each time the query is handed to an instance to run (after a {@link sendTo} too); one listener. */
  onSent(sent: () => void): void;
  /** Calls `settled` when postgres.js resolves or rejects the query. */
  onSettled(settled: () => void): void;
  /** Replaces how the query fails: `intercept` decides, given postgres.js's own `reject`. */
  interceptFailure(intercept: (error: unknown, reject: (error: unknown) => void) => void): void;
  /** Sends the query again, to `sql`'s instance. */
  sendTo(sql: postgres.Sql): void;
  /**
   * What postgres.js's `query.cancel()` does (a cancel request while it runs on a
   * connection, or its removal from the queue), except that a cancel request that cannot
   * be delivered is ignored: `query.cancel()` drops that promise, whose rejection would be
   * unhandled.
   */
  cancel(): void;
}

function hasQueryInternals(value: unknown): value is QueryInternals {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<QueryInternals>;
  return (
    Object.hasOwn(value, 'handler') &&
    Object.hasOwn(value, 'resolve') &&
    Object.hasOwn(value, 'reject') &&
    typeof candidate.handler === 'function' &&
    Object.hasOwn(value, 'canceller')
  );
}

/** `value` as a {@link QueryHandle}, or `undefined` if it is not a postgres.js query. */
export function asQueryHandle(value: unknown): QueryHandle | undefined {
  if (!hasQueryInternals(value)) return undefined;
  const query = value;
  let sent = (): void => {};
  const observed =
    (handler: QueryInternals['handler']): QueryInternals['handler'] =>
    (self) => {
      sent();
      handler(self);
    };
  query.handler = observed(query.handler);
  return {
    onSent(listener) {
      sent = listener;
    },
    onSettled(settled) {
      const { resolve, reject } = query;
      query.resolve = (value) => {
        settled();
        resolve(value);
      };
      query.reject = (error) => {
        settled();
        reject(error);
      };
    },
    interceptFailure(intercept) {
      const reject = query.reject;
      query.reject = (error) => intercept(error, reject);
    },
    sendTo(sql) {
      const donor = sql.unsafe('') as unknown as QueryInternals;
      query.handler = observed(donor.handler);
      query.canceller = donor.canceller;
      query.handler(query);
    },
    cancel() {
      const canceller = query.canceller;
      if (typeof canceller !== 'function') return;
      query.canceller = null;
      canceller(query).catch(() => {});
    },
  };
}

/**
 * Ends the connection of a reserved `sql` just given back to an instance that is ending.
 *
 * postgres.js's `end()` ends a reserved connection only at its next ReadyForQuery (or at
 * the `end` timeout): given back while idle, it would stay open, logged in, until the
 * drain deadline. A reserved `sql` still sends on its own connection after `release()`
 * (its handler holds the connection, not the instance), so one empty statement brings
 * that ReadyForQuery, and postgres.js terminates the connection there. If that changes,
 * the connection closes at the deadline as before.
 */
export function endReleasedConnection(reserved: postgres.ReservedSql): void {
  reserved.unsafe('').catch(() => {});
}
