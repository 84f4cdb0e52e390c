import type { ConnectionConfig } from '../config.js';
import type { SourceWatcherOptions } from '../events.js';
import type { HotloadLogger } from '../logging/logger.js';
import type { HotloadMetricsOptions } from '../metrics/hotload-metrics.js';
import type { ConnectionSource, SourceSpec } from '../source.js';

/**
 * The one options shape of the generation lifecycle (the `hotload` block of every
 * driver's config).
 *
 * @typeParam Client - the driver's client, as the `prepare` hook receives it
 */
export interface LifecycleOptions<Client = unknown> {
  /**
   * Where the connection config comes from (secret directory, DSN file, merged
   * directories, libpq environment, or any `ConnectionSource`). It is watched; every real
   * change switches to a new generation.
   */
  source: SourceSpec | ConnectionSource;
  /** How long a retired generation's connections in use may finish before being force-closed. Default 30 000. */
  drainTimeoutMillis?: number;
  /** A verify attempt that has not connected and answered `SELECT 1` by then fails. Default 10 000. */
  verifyTimeoutMillis?: number;
  /** First delay between verify attempts of a new config that fails. Default 100. */
  verifyRetryInitialMillis?: number;
  /** Cap of the (exponential, jittered) delay between verify attempts. Default 5 000. */
  verifyRetryMaxMillis?: number;
  /**
   * How long a new connection of the serving generation refused for its credentials
   * (SQLSTATE 28P01/28000) may wait for the generation of a new secret, which the
   * source is re-read for at once (the password changed in the database a moment before
   * the secret). Then, or if no new config serves by then, it fails with the refused
   * login's error. 0 fails it at once. Default 5 000.
   */
  credentialWaitMillis?: number;
  /**
   * Longest random delay before the first verify of a changed config: each switch waits a
   * uniformly random time up to this, so that many pods watching the same Secret do not
   * all open their verify connection in the same millisecond (a fleet-wide login storm).
   * It adds up to this much to a switch's latency. 0 (the default) verifies at once.
   */
  verifyJitterMillis?: number;
  /**
   * A config to serve at once: its generation is built and promoted in the constructor
   * (unverified, as a first generation is), before the source is read; the source's
   * first read switches away from it only if it differs. For a driver whose first
   * generation must exist synchronously (hotload-pg's `Pool` built from pg options).
   */
  initialConfig?: ConnectionConfig;
  /** Options of the source watcher (debounce, logger). */
  watcher?: SourceWatcherOptions;
  /**
   * What this pool is called in metric labels, diagnostics messages and log lines.
   * Default: the source's description (its paths). Never put a credential here.
   */
  name?: string;
  /** Prometheus metrics: `true` for prom-client's default registry, or `{ registry }`. Off by default. */
  metrics?: boolean | HotloadMetricsOptions;
  /** A pino-compatible logger for the switch lifecycle. Default: silent. */
  logger?: HotloadLogger;
  /**
   * Runs on the verify connection of every generation after the first (the first serves
   * as soon as the source is read), after `SELECT 1` and before any work moves there. A
   * rejection counts as a failed verify: the current generation keeps serving and the
   * attempt is retried with backoff.
   */
  prepare?: (client: Client) => Promise<void>;
}

/** The timing part of {@link LifecycleOptions}, every default applied. */
export interface ResolvedLifecycleOptions {
  /** Milliseconds a retired generation's connections in use may finish before being force-closed. */
  readonly drainTimeoutMillis: number;
  /** Milliseconds one verify attempt may take before it fails. */
  readonly verifyTimeoutMillis: number;
  /** First delay, in milliseconds, between verify attempts of a failing config. */
  readonly verifyRetryInitialMillis: number;
  /** Cap, in milliseconds, of the (exponential, jittered) delay between verify attempts. */
  readonly verifyRetryMaxMillis: number;
  /**
   * Milliseconds a connection refused for its credentials may wait for the generation of a new
   * secret (0: fail at once).
   */
  readonly credentialWaitMillis: number;
  /** Longest random delay, in milliseconds, before the first verify of a changed config (0: none). */
  readonly verifyJitterMillis: number;
}

const TIMINGS = [
  'drainTimeoutMillis',
  'verifyTimeoutMillis',
  'verifyRetryInitialMillis',
  'verifyRetryMaxMillis',
  'credentialWaitMillis',
  'verifyJitterMillis',
] as const;

/**
 * Applies the defaults and rejects values that would make the lifecycle misbehave, naming
 * the option (`hotload.<name>`). Throws before anything is started.
 */
export function resolveLifecycleOptions(
  options: LifecycleOptions<never> | undefined,
): ResolvedLifecycleOptions {
  if (!options || typeof options !== 'object' || !options.source) {
    throw new TypeError('hotload: the config needs `hotload: { source }`');
  }
  const resolved = {
    drainTimeoutMillis: options.drainTimeoutMillis ?? 30_000,
    verifyTimeoutMillis: options.verifyTimeoutMillis ?? 10_000,
    verifyRetryInitialMillis: options.verifyRetryInitialMillis ?? 100,
    verifyRetryMaxMillis: options.verifyRetryMaxMillis ?? 5_000,
    credentialWaitMillis: options.credentialWaitMillis ?? 5_000,
    verifyJitterMillis: options.verifyJitterMillis ?? 0,
  };
  for (const name of TIMINGS) {
    const value = resolved[name];
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw new RangeError(`hotload: hotload.${name} must be a non-negative number`);
    }
  }
  return resolved;
}
