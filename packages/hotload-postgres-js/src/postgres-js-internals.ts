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
 * {@link observeQuery} returns `undefined`: the query is neither tracked, cancelled nor
 * retried, and fails as postgres.js fails it.
 */
import type postgres from 'postgres';

/** The members of a postgres.js `Query` used here. */
interface QueryInternals {
  handler: (query: QueryInternals) => void;
  /** The connection's backend key once a connection runs it (null while queued or connecting). */
  state: object | null;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** The instance's cancel, as `query.cancel()` calls it (once), returning its promise. */
  canceller: ((query: QueryInternals) => Promise<void>) | null;
}

/** One postgres.js query (opaque outside this module: see {@link observeQuery}). */
export type PostgresJsQuery = object & { readonly __postgresJsQuery: unique symbol };

/**
 * What {@link observeQuery} calls for one query. One object per query, so that following
 * a query makes no closure per hook (these run on every query: issue 29 counted them).
 */
export interface QueryObserver {
  /**
   * The query is to be handed to an instance (each time, after a {@link sendQueryTo}
   * too): `send(query)` hands it, now or later.
   */
  dispatch(query: PostgresJsQuery, send: SendQuery): void;
  /** postgres.js resolved the query, or `reject` below rejected it. */
  settled(): void;
  /** postgres.js fails the query with `error`: reject it (`reject`), or send it elsewhere. */
  failed(error: unknown, reject: (error: unknown) => void): void;
}

/** The constructor of the last value found to be a postgres.js query: later ones are recognised by it. */
let knownQueryConstructor: unknown;

function hasQueryInternals(value: unknown): value is QueryInternals {
  if (typeof value !== 'object' || value === null) return false;
  // Every query of one postgres.js copy is made by the same constructor, which sets these
  // members: checking it spares four property checks on every query. `constructor` is one
  // inline-cached load from the prototype; `Object.getPrototypeOf` of a Promise subclass
  // (a query) calls into V8's runtime (issue 29 counted it).
  const madeBy: unknown = (value as { constructor?: unknown }).constructor;
  if (madeBy === knownQueryConstructor && madeBy !== undefined) return true;
  const candidate = value as Partial<QueryInternals>;
  const isQuery =
    Object.hasOwn(value, 'handler') &&
    Object.hasOwn(value, 'resolve') &&
    Object.hasOwn(value, 'reject') &&
    typeof candidate.handler === 'function' &&
    Object.hasOwn(value, 'canceller');
  if (isQuery && typeof madeBy === 'function' && !Object.hasOwn(value, 'constructor')) {
    knownQueryConstructor = madeBy;
  }
  return isQuery;
}

/**
 * Makes `observer` see `value` run, settle and fail, if it is a postgres.js query (a
 * fragment nested in another query never runs); returns it, or `undefined` for any other
 * value (then nothing is followed).
 */
export function observeQuery(value: unknown, observer: QueryObserver): PostgresJsQuery | undefined {
  if (!hasQueryInternals(value)) return undefined;
  const query = value;
  const { resolve, reject } = query;
  query.handler = observed(query.handler, observer);
  query.resolve = (result) => {
    observer.settled();
    resolve(result);
  };
  const settle = (error: unknown): void => {
    observer.settled();
    reject(error);
  };
  query.reject = (error) => observer.failed(error, settle);
  return query as unknown as PostgresJsQuery;
}

/** Gives the dispatcher the queries of one instance (`instanceHandler`) of `generation` run through. */
export interface QueryRunners<Generation> {
  runnerFor(generation: Generation, instanceHandler: SendQuery): SendQuery;
}

/**
 * Has `value`, if it is a postgres.js query of `generation`'s instance, run through the
 * dispatcher `runners` gives (instead of the instance's) when it first runs (awaited,
 * `.execute()`d, ...); returns `value`.
 *
 * Why not {@link observeQuery} at once: hotload's `sql` is inlined into the application's
 * call site, and V8 inlines at most about 900 bytes of bytecode into one function. With
 * the follower made there too, postgres.js's `sql` and its `Query` constructor no longer
 * fitted, and called out of line they had every scavenge keep queries' short-lived
 * objects (about 2.5 MB promoted a scavenge, a mark-compact every ten scavenges, client
 * CPU +38 % a query in bench/overhead-postgres-js with each side in a process of its
 * own). One member replaced is all the call site inlines; the follower is made when the
 * query runs.
 */
export function runThrough<Generation>(
  value: unknown,
  generation: Generation,
  runners: QueryRunners<Generation>,
): unknown {
  if (hasQueryInternals(value))
    value.handler = runners.runnerFor(generation, value.handler as unknown as SendQuery) as never;
  return value;
}

/** Puts back the instance's dispatcher of a query {@link runThrough} had run through another. */
export function restoreHandler(query: PostgresJsQuery, instanceHandler: SendQuery): void {
  (query as unknown as QueryInternals).handler = instanceHandler as unknown as QueryInternals['handler'];
}

/** An instance's dispatcher: what runs a query there (queue it, or send it on a connection). */
export type SendQuery = (query: PostgresJsQuery) => void;

/** An instance's dispatcher that goes through `observer` first. */
function observed(handler: QueryInternals['handler'], observer: QueryObserver): QueryInternals['handler'] {
  return (self) => observer.dispatch(self as unknown as PostgresJsQuery, handler as unknown as SendQuery);
}

/** Whether a connection runs `query` (it was not queued, nor handed to a connection still to open). */
export function isOnConnection(query: PostgresJsQuery): boolean {
  return (query as unknown as QueryInternals).state != null;
}

/** Fails `query` with `error` as postgres.js would (through the observer's `failed`, if observed). */
export function failQuery(query: PostgresJsQuery, error: unknown): void {
  (query as unknown as QueryInternals).reject(error);
}

/** Sends `query` again, to `sql`'s instance, still seen by `observer`. */
export function sendQueryTo(query: PostgresJsQuery, sql: postgres.Sql, observer: QueryObserver): void {
  const internals = query as unknown as QueryInternals;
  const donor = sql.unsafe('') as unknown as QueryInternals;
  internals.handler = observed(donor.handler, observer);
  internals.canceller = donor.canceller;
  internals.handler(internals);
}

/**
 * What postgres.js's `query.cancel()` does (a cancel request while it runs on a
 * connection, or its removal from the queue), except that a cancel request that cannot be
 * delivered is ignored: `query.cancel()` drops that promise, whose rejection would be
 * unhandled.
 */
export function cancelQuery(query: PostgresJsQuery): void {
  const internals = query as unknown as QueryInternals;
  const canceller = internals.canceller;
  if (typeof canceller !== 'function') return;
  internals.canceller = null;
  canceller(internals).catch(() => {});
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
