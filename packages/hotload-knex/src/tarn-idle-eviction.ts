/**
 * Destroying idle connections of a tarn pool on demand.
 *
 * tarn (Knex's pool) has no public call for "destroy these free resources now"; it only
 * drops them on acquire (failed `validate`) or after `idleTimeoutMillis`. A retired
 * generation's idle connections must close at once, so this reaches into the two members
 * tarn itself uses in its reaping cycle (`check()`): the `free` list of `Resource`s and
 * `_destroy()`. Both have been stable since tarn 2; if they are missing the call does
 * nothing and the connections are dropped on their next acquire instead.
 */

interface TarnFreeResource {
  readonly resource: unknown;
  settle(): void;
}

interface TarnPoolInternals {
  free: TarnFreeResource[];
  destroyed: boolean;
  _destroy(resource: unknown): Promise<unknown>;
}

function hasTarnInternals(pool: unknown): pool is TarnPoolInternals {
  const candidate = pool as Partial<TarnPoolInternals> | undefined;
  return Array.isArray(candidate?.free) && typeof candidate?._destroy === 'function';
}

/** Destroys the pool's idle resources for which `shouldGo` is true; returns how many. */
export function destroyIdleResources(pool: unknown, shouldGo: (resource: unknown) => boolean): number {
  if (!hasTarnInternals(pool) || pool.destroyed) return 0;
  const keep: TarnFreeResource[] = [];
  let destroyed = 0;
  for (const free of pool.free) {
    if (!shouldGo(free.resource)) {
      keep.push(free);
      continue;
    }
    free.settle();
    void pool._destroy(free.resource);
    destroyed++;
  }
  if (destroyed > 0) pool.free = keep;
  return destroyed;
}

/** tarn's default `idleTimeoutMillis`, used when the pool does not say. */
const TARN_DEFAULT_IDLE_MILLIS = 30_000;

/** How long the pool keeps an idle connection (tarn's public `idleTimeoutMillis` option, kept on the pool). */
export function idleTimeoutOf(pool: unknown): number {
  const millis = (pool as { idleTimeoutMillis?: unknown } | undefined)?.idleTimeoutMillis;
  return typeof millis === 'number' && millis > 0 ? millis : TARN_DEFAULT_IDLE_MILLIS;
}
