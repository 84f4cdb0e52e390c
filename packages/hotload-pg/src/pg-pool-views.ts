import type pg from 'pg';
import type { Generation } from './generation.js';
import type { GenerationSet } from './generation-set.js';
import { clientsOf, idleItemsOf, type PgPoolPendingItem, pendingItemsOf } from './pg-pool-lists.js';
import type { WaitQueue } from './wait-queue.js';

/** What the views read of one hotload pool. */
export interface PoolParts {
  readonly generations: GenerationSet;
  readonly queue: WaitQueue;
  /** The generation serving new checkouts, if any. */
  readonly serving: Generation | undefined;
}

/** Where the `options` setter keeps the options pg-pool's constructor computed. */
const baseOptions = Symbol('hotload-pg.baseOptions');

type WithBaseOptions = pg.Pool & { [baseOptions]?: pg.PoolConfig };

const noop = (): void => {};

/**
 * Defines on a hotload pool's prototype what pg-pool shows of its state, computed from
 * the pool's generations and wait queue (`partsOf` gives them; undefined while pg-pool's
 * constructor runs, before the pool's own fields exist):
 *
 * - the counts (`totalCount`, `idleCount`, `waitingCount`, `expiredCount`), which pg.Pool
 *   types as properties and pg-pool makes getters: every generation's, the checkouts
 *   waiting for the first config counted as pg.Pool would count them (connecting, up to
 *   `max`; see {@link WaitQueue.connectingFirst});
 * - pg-pool's `_clients`, `_idle` and `_pendingQueue`, which programs and pg's own tests
 *   read (see pg-pool-lists.ts): every generation's, and for `_pendingQueue` first the
 *   checkouts waiting in the pool's own queue (those pg.Pool would count as connecting
 *   excepted). Writes are dropped: pg-pool's constructor sets them on the outer pool,
 *   which never uses them;
 * - `options`: pg-pool's options of the serving generation (connection fields come from
 *   the source), else the base options pg-pool's constructor wrote (and completed)
 *   through the setter.
 */
export function definePgPoolViews<P extends pg.Pool>(
  prototype: P,
  partsOf: (pool: P) => PoolParts | undefined,
): void {
  const connectingFirst = (pool: P, parts: PoolParts): number =>
    parts.queue.connectingFirst(parts.serving, pool.options.max);
  const sum = (pool: P, count: (generation: pg.Pool) => number): number =>
    partsOf(pool)?.generations.sum(count) ?? 0;
  defineGetters(prototype, {
    totalCount: (pool) => {
      const parts = partsOf(pool);
      return parts
        ? connectingFirst(pool, parts) + parts.generations.sum((generation) => generation.totalCount)
        : 0;
    },
    idleCount: (pool) => sum(pool, (generation) => generation.idleCount),
    waitingCount: (pool) => {
      const parts = partsOf(pool);
      if (parts === undefined) return 0;
      const { queue, generations } = parts;
      return (
        queue.length - connectingFirst(pool, parts) + generations.sum((generation) => generation.waitingCount)
      );
    },
    expiredCount: (pool) => sum(pool, (generation) => generation.expiredCount),
  });
  defineGetters(
    prototype,
    {
      _clients: (pool) => partsOf(pool)?.generations.flatten(clientsOf) ?? [],
      _idle: (pool) => partsOf(pool)?.generations.flatten(idleItemsOf) ?? [],
      _pendingQueue: (pool): PgPoolPendingItem[] => {
        const parts = partsOf(pool);
        if (parts === undefined) return [];
        return [
          ...parts.queue.waiters.slice(connectingFirst(pool, parts)).map(({ callback }) => ({ callback })),
          ...parts.generations.flatten(pendingItemsOf),
        ];
      },
    },
    noop,
  );
  Object.defineProperty(prototype, 'options', {
    configurable: true,
    get(this: P): pg.PoolConfig {
      return partsOf(this)?.serving?.pool.options ?? (this as WithBaseOptions)[baseOptions]!;
    },
    set(this: P, value: pg.PoolConfig) {
      Object.defineProperty(this, baseOptions, { configurable: true, writable: true, value });
    },
  });
}

/**
 * Defines getters on `prototype`, each computed from the instance. With `set`, writes go
 * to it (for members pg-pool's constructor assigns); without, the members are read-only.
 */
function defineGetters<T>(
  prototype: T,
  getters: Record<string, (instance: T) => unknown>,
  set?: (this: T, value: unknown) => void,
): void {
  for (const [name, get] of Object.entries(getters)) {
    Object.defineProperty(prototype, name, {
      configurable: true,
      get(this: T) {
        return get(this);
      },
      ...(set ? { set } : {}),
    });
  }
}
