import type {
  ConnectionSource,
  HotloadLogger,
  HotloadMetricsOptions,
  SourceSpec,
  SourceWatcherOptions,
} from 'hotload-core';

/** The `hotload` block of a Knex config handled by {@link HotloadPgClient}. */
export interface HotloadKnexOptions {
  /** Where the connection config comes from (a secret directory, DSN file, ...). */
  source: SourceSpec | ConnectionSource;
  /**
   * How long a retired generation's connections that are still in use (an open
   * transaction, a long query, a stream) may keep running after a switch before they are
   * force-closed with hotload-pg's `ForceClosedError`. Default 30 000 ms.
   */
  drainTimeoutMillis?: number;
  /** Time limit for verifying a new config (connect + `SELECT 1`). Default 10 000 ms. */
  verifyTimeoutMillis?: number;
  /** First retry delay after a failed verification; doubles on each failure. Default 100 ms. */
  retryInitialDelayMillis?: number;
  /** Upper bound of the retry delay. Default 5 000 ms. */
  retryMaxDelayMillis?: number;
  /** Passed to the source watcher: bursts of file events within this window are read once. */
  debounceMillis?: number;
  /**
   * Options of the source watcher (hotload-core's `SourceWatcherOptions`: `watchMode`,
   * `pollIntervalMillis`, `resyncIntervalMillis`, ...); `debounceMillis` above wins.
   */
  watcher?: SourceWatcherOptions;
  /**
   * This client's name in metric labels, diagnostics messages and log lines. Default: the
   * source's description (its paths). Never put a credential here.
   */
  name?: string;
  /** Prometheus metrics (see `instrumentKnex`): `true` or `{ registry }`. Off by default. */
  metrics?: boolean | HotloadMetricsOptions;
  /** A pino-compatible logger for the switch lifecycle. Default: silent. */
  logger?: HotloadLogger;
}

/** {@link HotloadKnexOptions} with every default filled in. */
export interface ResolvedHotloadKnexOptions {
  readonly source: SourceSpec | ConnectionSource;
  readonly drainTimeoutMillis: number;
  readonly verifyTimeoutMillis: number;
  readonly retryInitialDelayMillis: number;
  readonly retryMaxDelayMillis: number;
  readonly debounceMillis: number | undefined;
  readonly watcher: SourceWatcherOptions;
}

/** Fills in defaults and rejects values that would make the switch machinery misbehave. */
export function resolveHotloadKnexOptions(
  options: HotloadKnexOptions | undefined,
): ResolvedHotloadKnexOptions {
  if (!options || typeof options !== 'object' || !options.source) {
    throw new TypeError('hotload-knex: the Knex config needs `hotload: { source }`');
  }
  const resolved = {
    source: options.source,
    drainTimeoutMillis: options.drainTimeoutMillis ?? 30_000,
    verifyTimeoutMillis: options.verifyTimeoutMillis ?? 10_000,
    retryInitialDelayMillis: options.retryInitialDelayMillis ?? 100,
    retryMaxDelayMillis: options.retryMaxDelayMillis ?? 5_000,
    debounceMillis: options.debounceMillis,
    watcher: options.watcher ?? {},
  };
  for (const name of [
    'drainTimeoutMillis',
    'verifyTimeoutMillis',
    'retryInitialDelayMillis',
    'retryMaxDelayMillis',
  ] as const) {
    const value = resolved[name];
    if (!Number.isFinite(value) || value < 0) {
      throw new RangeError(`hotload-knex: hotload.${name} must be a non-negative number`);
    }
  }
  return resolved;
}
