import type { ConnectionSource, LifecycleOptions, SourceSpec } from 'hotload-core';
import type pg from 'pg';

/**
 * The hotload part of a {@link PoolConfig}: hotload-core's `LifecycleOptions` (the one
 * options shape of every driver: `drainTimeoutMillis`, `verifyTimeoutMillis`,
 * `verifyRetryInitialMillis`, `verifyRetryMaxMillis`, `credentialWaitMillis`, `watcher`,
 * `name`, `metrics`, `logger`, `prepare`), with the source optional.
 *
 * `credentialWaitMillis` in a Pool: how long a checkout may wait when the serving
 * generation's database refuses new connections for bad credentials (28P01/28000) while
 * it still has open clients. It is served by a released client or by the next
 * generation, or fails with the database's error (or sooner at
 * `connectionTimeoutMillis`); meanwhile the generation tries one new connection at a
 * time, backing off from `verifyRetryInitialMillis` to `verifyRetryMaxMillis`. Only with
 * a `source`; every other connection failure fails the checkout at once, as with pg.Pool.
 * `name` defaults to the source's description, or `static` without a source.
 */
export interface HotloadOptions extends Omit<LifecycleOptions<pg.PoolClient>, 'source'> {
  /**
   * Where the connection config comes from (secret directory, DSN file, merged
   * directories, libpq environment, or any `ConnectionSource`). It is watched; every
   * real change switches the pool to a new generation. Without it, the pool connects with
   * the pg options and switches only when `switchTo()` is called.
   */
  source?: SourceSpec | ConnectionSource;
}

/** `pg.PoolConfig` plus the optional `hotload` options. */
export interface PoolConfig extends pg.PoolConfig {
  /** What to follow and how (see {@link HotloadOptions}); without it the pool is a plain pg.Pool. */
  hotload?: HotloadOptions | undefined;
}

/**
 * A copy of `config`'s own enumerable fields that keeps a password pg holds out of sight:
 * pg-pool's `options` and pg's ConnectionParameters define `password` non-enumerable (out
 * of logs and stack traces), which a spread drops. Taken as pg-pool takes it (`'password'
 * in config`), so `new Pool(otherPool.options)` keeps it, as with pg.Pool.
 */
export function copyPoolConfig(config: PoolConfig | undefined): PoolConfig {
  const copy: PoolConfig = { ...config };
  if (config != null && 'password' in config) copy.password = config.password;
  return copy;
}
