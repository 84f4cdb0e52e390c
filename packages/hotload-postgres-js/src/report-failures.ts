/**
 * Makes a query (or any promise postgres.js returns) tell `report` when it fails, without
 * running it: postgres.js queries are lazy (they start on the first `then`), so attaching
 * a `catch` would run fragments meant to be nested in another query. Only the holder's own
 * `then`/`await` is wrapped, with one own property on that one query object.
 */
export function reportFailures<T>(value: T, report: (error: Error) => void): T {
  if (typeof value !== 'object' || value === null) return value;
  const then = (value as { then?: unknown }).then;
  if (typeof then !== 'function') return value;
  Object.defineProperty(value, 'then', {
    configurable: true,
    writable: true,
    value(this: T, onFulfilled?: (result: unknown) => unknown, onRejected?: (error: unknown) => unknown) {
      return then.call(this, onFulfilled, (error: unknown) => {
        if (error instanceof Error) report(error);
        if (onRejected) return onRejected(error);
        throw error;
      });
    },
  });
  return value;
}
