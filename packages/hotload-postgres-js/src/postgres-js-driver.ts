import {
  ConnectionBudget,
  type ConnectionConfig,
  type ForceClosedError,
  type GenerationDriver,
  type HostPort,
  type VerifySession,
} from 'hotload-core';
import postgres from 'postgres';
import { BudgetedSockets, type SocketFactory, withCancelsUnbudgeted } from './budgeted-socket.js';
import { followStateOf } from './follow-state.js';
import { cancelQuery } from './postgres-js-internals.js';
import { type PostgresOptions, toPostgresOptions } from './postgres-options.js';
import { QueryAdmission } from './query-admission.js';
import { openVerifyConnection, typesKnownFor } from './verify-connection.js';

/** One generation: one `postgres()` instance. */
export interface PostgresGeneration {
  /** The generation's number, as the lifecycle's events and logs give it. */
  readonly id: number;
  /** The generation's `postgres()` instance, built with the config's connection fields on one host. */
  readonly sql: postgres.Sql;
  /**
   * True once it stopped serving: its drain (`sql.end({ timeout })`) started, or, as a
   * candidate never promoted, it was discarded. The same name as the other drivers' for
   * this state.
   */
  readonly retired: boolean;
  /**
   * Its drain (`sql.end({ timeout })`) once started, else undefined.
   *
   * @deprecated Read {@link PostgresGeneration.retired} for whether it still serves; the
   * drain is the lifecycle's (`hotload.close()` waits for it). Kept for programs that read it.
   */
  readonly ending: Promise<void> | undefined;
}

/** The drain of each generation once started (`sql.end(...)`, once). */
const drains = new WeakMap<PostgresGeneration, Promise<void>>();
/** Each generation's connections, counted against the hotload sql's budget. */
const socketsOf = new WeakMap<PostgresGeneration, BudgetedSockets>();

/**
 * Starts `generation`'s `sql.end({ timeout })` once (after its connections waiting for
 * budget have failed); later calls return the same promise.
 */
function endOnce(generation: PostgresGeneration, timeoutSeconds: number): Promise<void> {
  let drain = drains.get(generation);
  if (drain === undefined) {
    const retired = socketsOf.get(generation)?.retire(generation.id) ?? Promise.resolve();
    drain = retired.then(() => generation.sql.end({ timeout: timeoutSeconds }));
    drains.set(generation, drain);
  }
  return drain;
}

/**
 * The lifecycle's driver for postgres.js: a generation is one `postgres()` instance,
 * drained with `sql.end({ timeout })`, postgres.js's own drain: no new queries, running
 * ones finish, idle connections close, and at the timeout the rest are terminated.
 * postgres.js does not expose its connections, so the generation itself stands for "what
 * is still in use" at the deadline; its force-close sends a cancel request for every query
 * still running (postgres.js's `query.cancel()`; terminating the connection alone would
 * leave the server running the query until it next writes to the client), and those
 * queries fail with the `ForceClosedError`.
 */
export class PostgresJsDriver
  implements GenerationDriver<PostgresGeneration, postgres.ReservedSql, PostgresGeneration>
{
  #serving: PostgresGeneration | undefined;
  /**
   * The connections of every generation against `max` (postgres.js's default 10), plus
   * the verify connection: at most `max + 1` across a switch. Each generation's instance
   * opens its connections through the `socket` option, which waits for this budget.
   */
  readonly budget: ConnectionBudget;

  constructor(
    private readonly options: PostgresOptions,
    private readonly drainTimeoutMillis: number,
  ) {
    this.budget = new ConnectionBudget(() => options.max ?? DEFAULT_MAX);
  }

  /**
   * Builds a `postgres()` instance for `config` on `host` (not connected yet: postgres.js
   * connects lazily). It starts with the serving generation's `options.parsers`,
   * `options.serializers` and array types, so a switch keeps how values are read and
   * written.
   */
  build(config: ConnectionConfig, host: HostPort, id: number): PostgresGeneration {
    const sockets = new BudgetedSockets(this.budget, applicationSocket(this.options));
    const sql = postgres({
      ...toPostgresOptions(this.options, config, host),
      socket: sockets.factory,
    } as PostgresOptions);
    sockets.belongTo(sql.options);
    carryTypeHandlers(this.#serving?.sql, sql);
    const generation: PostgresGeneration = {
      id,
      sql,
      get retired() {
        return drains.has(generation);
      },
      get ending() {
        return drains.get(generation);
      },
    };
    socketsOf.set(generation, sockets);
    const follow = followStateOf(generation);
    follow.admission = new QueryAdmission(sockets, follow.running);
    return generation;
  }

  /**
   * Verifies `candidate` on one reserved connection (its instance's first, opened beyond
   * the budget as its `+ 1`), released afterwards: the connection the generation then
   * serves with first (one handshake per switch). When the serving generation already
   * knows the server's array types, that connection does not fetch them again (see
   * `verify-connection.ts`).
   */
  async connect(candidate: PostgresGeneration): Promise<VerifySession<postgres.ReservedSql>> {
    socketsOf.get(candidate)?.verifyNext();
    return openVerifyConnection(candidate.sql, typesKnownFor(candidate.sql, this.#serving?.sql));
  }

  /** Makes `candidate` the serving generation (the one later generations take their type handlers from). */
  promote(candidate: PostgresGeneration): void {
    this.#serving = candidate;
  }

  /**
   * Starts `sql.end({ timeout })` with the drain timeout (converted from milliseconds to
   * postgres.js's seconds), once: a second call returns the same promise.
   */
  drain(generation: PostgresGeneration): Promise<void> {
    return endOnce(generation, this.drainTimeoutMillis / 1000);
  }

  /** The generation itself: postgres.js does not expose its connections, so it stands for them. */
  inUse(generation: PostgresGeneration): readonly PostgresGeneration[] {
    return [generation];
  }

  /**
   * Cancels, on the server, every query still running on `generation` (postgres.js
   * terminates its connections at the same deadline: the manager's timer was set first,
   * so the cancel goes out while the queries are still on their connections).
   */
  forceClose(generation: PostgresGeneration, _connection: PostgresGeneration, error: ForceClosedError): void {
    const state = followStateOf(generation);
    state.forceClosed = error;
    withCancelsUnbudgeted(() => {
      for (const query of state.running.takeAll()) cancelQuery(query);
    });
  }

  /** Ends a candidate never promoted at once (`sql.end({ timeout: 0 })`). */
  async discard(candidate: PostgresGeneration): Promise<void> {
    await endOnce(candidate, 0);
  }

  /** The generation's connections open (or closing), as its `socket` option counted them. */
  count(generation: PostgresGeneration): number {
    return socketsOf.get(generation)?.open ?? 0;
  }
}

/** postgres.js's default `max`. */
const DEFAULT_MAX = 10;

/** The application's own `socket` option (untyped in postgres.js's types), which the budget wraps. */
function applicationSocket(options: PostgresOptions): SocketFactory | undefined {
  const socket: unknown = (options as { socket?: unknown }).socket;
  return typeof socket === 'function' ? (socket as SocketFactory) : undefined;
}

/**
 * Libraries configure postgres.js by changing the instance's `options.parsers` and
 * `options.serializers` in place (Drizzle makes dates and JSON pass through untouched):
 * each new generation starts with the serving one's, so a switch does not change how
 * values are read or written.
 */
function carryTypeHandlers(from: postgres.Sql | undefined, to: postgres.Sql): void {
  if (from === undefined) return;
  Object.assign(to.options.parsers, from.options.parsers);
  Object.assign(to.options.serializers, from.options.serializers);
  // Element type → array type, which `sql.array()` reads: postgres.js fills it only for array
  // types it has no parser for yet, so the carried parsers would leave it empty.
  Object.assign(sharedOf(to).typeArrayMap, sharedOf(from).typeArrayMap);
}

/** postgres.js's per-instance `options.shared` (3.x; not in its types). */
function sharedOf(sql: postgres.Sql): { typeArrayMap: Record<number, number> } {
  const shared = (sql.options as { shared?: { typeArrayMap?: Record<number, number> } }).shared;
  if (shared?.typeArrayMap === undefined) return { typeArrayMap: {} };
  return shared as { typeArrayMap: Record<number, number> };
}
