import type postgres from 'postgres';
import { followQuery, type NextGeneration } from './followed-query.js';
import type { PostgresGeneration } from './postgres-js-driver.js';
import { endReleasedConnection } from './postgres-js-internals.js';

/** Members of a reserved or transaction `sql` that return a postgres.js query. */
const RETURNS_QUERY = new Set<string | symbol>(['unsafe', 'file']);

/** A query on a connection that is already logged in is never moved: its failure is its own. */
const stay: NextGeneration = (_generation, error) => Promise.reject(error);

/**
 * A reserved connection's `sql` (`sql.reserve()`), or a transaction's (`sql.begin()`,
 * `savepoint()`), whose queries are followed on `generation` like the top-level ones
 * (cancelled on the server at a force-close, failing with its `ForceClosedError`); they
 * stay on their connection.
 */
export function scopedSql<S extends object>(
  sql: S,
  generation: PostgresGeneration,
  /** Called once the reserved connection is given back (`release()`). */
  onRelease?: () => void,
): S {
  return new Proxy(sql, {
    apply: (target, thisArg, args: unknown[]) => {
      const result: unknown = Reflect.apply(target as (...a: unknown[]) => unknown, thisArg, args);
      followQuery(result, generation, stay, undefined, true);
      return result;
    },
    get: (target, property) => {
      const value: unknown = Reflect.get(target, property);
      if (typeof value !== 'function') return value;
      if (property === 'release') {
        return () => {
          (value as () => void).call(target);
          onRelease?.();
          // Given back while its generation drains: close it now, not at the deadline.
          if (generation.retired) endReleasedConnection(target as unknown as postgres.ReservedSql);
        };
      }
      if (property === 'savepoint') {
        return (...args: unknown[]) => Reflect.apply(value, target, withScopedCallbacks(args, generation));
      }
      if (!RETURNS_QUERY.has(property)) return value.bind(target);
      return (...args: unknown[]) => {
        const result: unknown = Reflect.apply(value, target, args);
        followQuery(result, generation, stay, undefined, true);
        return result;
      };
    },
  });
}

/** `args` with every callback getting its `sql` argument scoped (a transaction's body, a savepoint's). */
export function withScopedCallbacks(
  args: readonly unknown[],
  generation: PostgresGeneration,
  onCall: () => void = () => {},
): unknown[] {
  return args.map((arg) =>
    typeof arg === 'function'
      ? (sql: object, ...rest: unknown[]) => {
          onCall();
          return Reflect.apply(arg, undefined, [scopedSql(sql, generation), ...rest]);
        }
      : arg,
  );
}
