import { GenerationManager, type LifecycleOptions, resolveLifecycleOptions } from 'hotload-core';
import type postgres from 'postgres';
import { followStateOf } from './follow-state.js';
import {
  FollowingRunners,
  type NextGeneration,
  type ReportFailure,
  retryRefusedLogin,
} from './followed-query.js';
import { type PostgresGeneration, PostgresJsDriver } from './postgres-js-driver.js';
import { runThrough } from './postgres-js-internals.js';
import type { PostgresOptions } from './postgres-options.js';
import { reportFailures } from './report-failures.js';
import { scopedSql, withScopedCallbacks } from './scoped-sql.js';

/** Options of {@link createHotloadSql}. */
export interface HotloadSqlOptions {
  /** postgres.js options (`max`, `idle_timeout`, `transform`, ...); connection fields come from the source. */
  readonly postgres?: PostgresOptions;
  /** Where the config comes from and how switches go (the lifecycle's one options shape). */
  readonly hotload: LifecycleOptions<postgres.ReservedSql>;
}

/** A postgres.js `sql` that follows the source, with the lifecycle at `sql.hotload`. */
export type HotloadSql = postgres.Sql & {
  /** Events (`switch`, `verifyFailed`, `drained`, `forceClosed`, `sourceError`) and the current generation. */
  readonly hotload: GenerationManager<PostgresGeneration, postgres.ReservedSql, PostgresGeneration>;
};

/**
 * A postgres.js `sql` whose every use (tagged template, `sql.begin`, `sql.reserve`,
 * `sql.unsafe`, helpers, ...) goes to the `postgres()` instance of the serving
 * generation. On a verified change new queries go to a new instance and the old one is
 * ended with `sql.end({ timeout: drainTimeoutMillis / 1000 })`. `sql.end()` stops
 * watching and ends every generation.
 *
 * Waits until the source was read (rejects with its `SourceError`, leaving nothing running).
 */
export async function createHotloadSql(options: HotloadSqlOptions): Promise<HotloadSql> {
  const { drainTimeoutMillis } = resolveLifecycleOptions(options.hotload);
  const driver = new PostgresJsDriver(options.postgres ?? {}, drainTimeoutMillis);
  const manager = new GenerationManager(driver, options.hotload);
  try {
    await manager.ready();
  } catch (error) {
    await manager.close();
    throw error;
  }
  return followingSql(manager);
}

/** `sql` members that return a postgres.js query (the others, like `sql.typed` or `sql.json`, build values). */
const RETURNS_QUERY = new Set<string | symbol>(['unsafe', 'file', 'notify']);
/** `sql` members that return a promise of a connection's work: run again after a refused login. */
const CALLED_AGAIN = new Set<string | symbol>(['begin', 'reserve', 'listen']);

/**
 * The `sql` proxy: calls and property reads go to the serving generation's instance, and
 * what they return reports its failure to the lifecycle (a lost connection or `25006` may
 * mean the primary moved: host lists re-run host selection). A login refused for its
 * credentials waits (bounded) for the new secret's generation and runs there.
 */
function followingSql(manager: HotloadSql['hotload']): HotloadSql {
  const current = (): PostgresGeneration => {
    const generation = manager.current;
    if (generation === undefined) throw new Error('hotload-postgres-js: closed');
    return generation;
  };
  const reported = <T>(generation: PostgresGeneration, value: T): T =>
    reportFailures(value, (error) => manager.reportError(generation, error));
  const next: NextGeneration = (generation, error) => manager.awaitCredentialChange(generation, error);
  const report: ReportFailure = (generation, error) => manager.reportError(generation, error);
  // A query reports its own failure (see followQuery): one wrapper less on every query.
  // Every query the serving instance hands out (the tagged template's and its methods')
  // is followed from when it runs, through the one dispatcher per instance.
  const runners = new FollowingRunners(next, report);
  const calledAgain = (generation: PostgresGeneration, property: string | symbol, args: unknown[]) => {
    // A callback that ran (a transaction's body) makes a later failure the user's, not a login's.
    let started = false;
    const run = async (on: PostgresGeneration): Promise<unknown> => {
      const method = Reflect.get(on.sql, property) as (...a: unknown[]) => Promise<unknown>;
      // A transaction's body gets its `sql` scoped; listen's callbacks get payloads, not an `sql`.
      const callArgs = property === 'begin' ? withScopedCallbacks(args, on, () => (started = true)) : args;
      if (property === 'listen') return Reflect.apply(method, on.sql, callArgs);
      // A transaction or a reserved connection keeps a connection of the instance busy:
      // it waits for one as a query does (see QueryAdmission).
      const admission = followStateOf(on).admission;
      await admission?.enter();
      const vacate = () => admission?.vacate();
      const result: unknown = await Reflect.apply(method, on.sql, callArgs).catch((error: unknown) => {
        vacate();
        throw error;
      });
      if (property === 'reserve') return scopedSql(result as object, on, vacate);
      vacate();
      return result;
    };
    return reported(
      generation,
      retryRefusedLogin(manager, generation, run, () => started),
    );
  };
  const end = async (): Promise<void> => manager.close();
  // Calls go to a plain function that calls the instance's `sql` directly: called through
  // a Proxy's `apply` trap (or `Reflect.apply`, its equivalent), V8 never inlines
  // postgres.js's `sql` and its Query constructor into the caller, and each scavenge then
  // kept about 1.8 MB of a query's short-lived objects (promoted, then a mark-compact
  // every eight scavenges; plain postgres.js with `--no-turbo-inlining` does the same). That
  // made a query cost 15 % more instructions than with postgres.js alone (issue 29). A
  // method (not a `function`) has no own `prototype`; postgres.js's `sql` ignores `this`.
  const { hotloadSql } = {
    hotloadSql(...args: unknown[]): unknown {
      const generation = current();
      const sql: (...a: unknown[]) => unknown = generation.sql;
      return runThrough(sql(...args), generation, runners);
    },
  };
  // Its own `length` and `name` would hide the instance's: every property is the serving instance's.
  Reflect.deleteProperty(hotloadSql, 'length');
  Reflect.deleteProperty(hotloadSql, 'name');
  // Property reads (none are its own) reach its prototype, a Proxy: they go to the serving
  // generation's instance, as calls do.
  Object.setPrototypeOf(
    hotloadSql,
    new Proxy(function hotloadSqlMembers() {}, {
      get: (_target, property) => {
        if (property === 'hotload') return manager;
        if (property === 'end' || property === 'close') return end;
        const generation = current();
        const value: unknown = Reflect.get(generation.sql, property);
        if (typeof value !== 'function') return value;
        if (CALLED_AGAIN.has(property))
          return (...args: unknown[]) => calledAgain(generation, property, args);
        if (!RETURNS_QUERY.has(property)) return value.bind(generation.sql);
        return (...args: unknown[]) =>
          runThrough(Reflect.apply(value, generation.sql, args), generation, runners);
      },
      // An assignment changes nothing that reads see (reads are the serving instance's), as before.
      set: () => true,
    }),
  );
  return hotloadSql as unknown as HotloadSql;
}
