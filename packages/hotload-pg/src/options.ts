import type {
  ConnectionSource,
  HotloadLogger,
  HotloadMetricsOptions,
  SourceSpec,
  SourceWatcherOptions,
} from 'hotload-core';
import type pg from 'pg';

/** The hotload part of a {@link PoolConfig}: where the connection comes from and how switches go. */
export interface HotloadOptions {
  /**
   * Where the connection config comes from (secret directory, DSN file, merged
   * directories, libpq environment, or any `ConnectionSource`). It is watched; every
   * real change switches the pool to a new generation. Without it, the pool connects with
   * the pg options and switches only when `switchTo()` is called.
   */
  source?: SourceSpec | ConnectionSource;
  /** How long a retired generation's checked-out clients may finish before being force-closed. Default 30 000. */
  drainTimeoutMillis?: number;
  /** First delay between verify attempts of a new config that fails. Default 100. */
  verifyRetryInitialMillis?: number;
  /** Cap of the (exponential, jittered) delay between verify attempts. Default 5 000. */
  verifyRetryMaxMillis?: number;
  /** A verify attempt that has not connected and answered `SELECT 1` by then fails. Default 10 000. */
  verifyTimeoutMillis?: number;
  /**
   * How long a checkout may wait when the serving generation's database refuses new
   * connections for bad credentials (SQLSTATE 28P01/28000) while it still has open
   * clients: the password was changed in the database a moment before the secret. The
   * source is re-read at once; the checkout is served by a released client or by the
   * next generation, or fails with the database's error after this long (or sooner at
   * `connectionTimeoutMillis`). Meanwhile the generation tries one new connection at a
   * time, backing off from `verifyRetryInitialMillis` to `verifyRetryMaxMillis`.
   * Only with a `source`; every other connection failure fails the checkout at once, as
   * with pg.Pool. Default 5 000.
   */
  credentialWaitMillis?: number;
  /** Options of the source watcher (debounce, watch mode, polling interval, resync interval). */
  watcher?: SourceWatcherOptions;
  /**
   * What this pool is called in metric labels, diagnostics messages and log lines.
   * Default: the source's description (its paths), or `static` without a source.
   * Never put a credential here.
   */
  name?: string;
  /**
   * Prometheus metrics (see `instrumentPool`): `true` for prom-client's default registry,
   * or `{ registry }`. Off by default; prom-client is loaded only when this is set.
   */
  metrics?: boolean | HotloadMetricsOptions;
  /** A pino-compatible logger for the switch lifecycle. Default: silent. */
  logger?: HotloadLogger;
  /**
   * Runs on the verify connection of every generation after the first (the first serves
   * as soon as the source is read, as `pg.Pool` would), after `SELECT 1` and before
   * any work moves there — e.g. to make sure the schema exists on a server the database
   * just moved to. A rejection counts as a failed verify: the current generation keeps
   * serving and the attempt is retried with backoff.
   */
  prepare?: (client: pg.PoolClient) => Promise<void>;
}

/** `pg.PoolConfig` plus the optional `hotload` options. */
export interface PoolConfig extends pg.PoolConfig {
  hotload?: HotloadOptions | undefined;
}

/** {@link HotloadOptions} with every default applied. */
export interface ResolvedSwitchOptions {
  readonly drainTimeoutMillis: number;
  readonly verifyRetryInitialMillis: number;
  readonly verifyRetryMaxMillis: number;
  readonly verifyTimeoutMillis: number;
  readonly credentialWaitMillis: number;
  readonly prepare: ((client: pg.PoolClient) => Promise<void>) | undefined;
}

/** Applies the defaults of {@link HotloadOptions}. */
export function resolveSwitchOptions(options: HotloadOptions | undefined): ResolvedSwitchOptions {
  return {
    drainTimeoutMillis: options?.drainTimeoutMillis ?? 30_000,
    verifyRetryInitialMillis: options?.verifyRetryInitialMillis ?? 100,
    verifyRetryMaxMillis: options?.verifyRetryMaxMillis ?? 5_000,
    verifyTimeoutMillis: options?.verifyTimeoutMillis ?? 10_000,
    credentialWaitMillis: options?.credentialWaitMillis ?? 5_000,
    prepare: options?.prepare,
  };
}
