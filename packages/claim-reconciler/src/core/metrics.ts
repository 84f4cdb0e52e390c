/**
 * Metrics of the database controller ("Metrics/Telemetry" in its design), with the names
 * the database controller itself exposes (`users_created_total`, `password_rotated_total`,
 * ...), as a small interface the reconciler calls, and a Prometheus implementation on the
 * optional `prom-client` peer.
 */
import type { PromClientModule, PromMetric, PromRegistry } from 'hotload-core';
import type { ClaimResult } from './claim-outcome.js';

/** What the reconciler reports. All durations are in seconds. */
export interface ReconcilerMetrics {
  /** Login users created, and the time the claim's provisioning took. */
  usersCreated(count: number, seconds: number): void;
  /** A claim's provisioning failed (SQL, login or publish error). */
  provisioningError(): void;
  /** Creating users failed. */
  userCreateError(): void;
  /** A password was rotated (set, verified, published), and how long that took. */
  passwordRotated(seconds: number): void;
  /** A rotation failed. */
  passwordRotateError(): void;
  /** A claim was loaded and reconciled, and how long that took. */
  claimLoaded(seconds: number): void;
  /** A claim document failed validation. */
  claimLoadError(): void;
  /** A database was created. */
  databaseCreated?(): void;
  /** After each pass: how many claims ended in each state. */
  claimStates?(counts: Readonly<Partial<Record<ClaimResult, number>>>): void;
  /** An online migration (instance change) started. */
  migrationStarted?(): void;
  /** An online migration finished: the application is on the target, the source retired. */
  migrationCompleted?(): void;
  /** A pass of an online migration failed (refusal, conflict, unreachable instance). */
  migrationFailed?(): void;
  /** Replication lag of a claim's migration, in WAL bytes and seconds (null: unknown). */
  migrationLag?(claim: string, bytes: number | null, seconds: number | null): void;
  /**
   * A claim's migration cut over: what started it (`lag-threshold`, `synchronous-apply`,
   * `fence`), seconds from the start of streaming to the cutover, and the longest write
   * pause a fence took (0 without one).
   */
  migrationCutover?(
    claim: string,
    strategy: string,
    waitSeconds: number,
    longestWritePauseSeconds: number,
  ): void;
}

/**
 * Metric names: the database controller's where it has one (same meaning), `dbclaim_`
 * for the ones only its design lists (claim loading) and for claims by state.
 */
export const METRIC_NAMES = {
  usersCreated: 'users_created_total',
  userCreateSeconds: 'user_create_time_seconds',
  userCreateErrors: 'users_create_errors_total',
  usersUpdated: 'users_updated_total',
  userUpdateSeconds: 'user_update_time_seconds',
  userUpdateErrors: 'users_update_errors_total',
  databasesCreated: 'databases_created_total',
  provisioningErrors: 'database_provisioning_errors_total',
  passwordsRotated: 'password_rotated_total',
  passwordRotateSeconds: 'password_rotation_time_seconds',
  passwordRotateErrors: 'password_rotate_errors_total',
  claimsLoaded: 'dbclaim_claims_loaded_total',
  claimLoadSeconds: 'dbclaim_claim_load_duration_seconds',
  claimLoadErrors: 'dbclaim_claim_load_errors_total',
  claims: 'dbclaim_claims',
  migrationsStarted: 'dbclaim_migrations_started_total',
  migrationsCompleted: 'dbclaim_migrations_completed_total',
  migrationsFailed: 'dbclaim_migrations_failed_total',
  migrationLagBytes: 'dbclaim_migration_lag_bytes',
  migrationLagSeconds: 'dbclaim_migration_lag_seconds',
  migrationCutoverWaitSeconds: 'dbclaim_migration_cutover_wait_seconds',
  migrationWritePauseSeconds: 'dbclaim_migration_write_pause_seconds',
} as const;

/** Every state a claim can end a pass in: the `state` label values of `dbclaim_claims`. */
export const CLAIM_STATES: readonly ClaimResult[] = [
  'created',
  'rotated',
  'repaired',
  'moved',
  'migrating',
  'updated',
  'unchanged',
  'deleted',
  'deletion-pending',
  'not-pruned',
  'error',
];

/**
 * Prometheus metrics registered in `registry`. Pass the `prom-client` module you use, so
 * this package does not load its own copy: `prometheusMetrics(await import('prom-client'), registry)`.
 * A rotation sets a new password on an existing user, so it counts as a user update too
 * (`users_updated_total`, `user_update_time_seconds`), as in the database controller.
 */
export function prometheusMetrics(
  client: Pick<PromClientModule, 'Counter' | 'Histogram' | 'Gauge'>,
  registry: PromRegistry,
): ReconcilerMetrics {
  // Metrics are registered after construction: the structural PromRegistry type (which
  // keeps prom-client's types out of this package's declarations) cannot be a `registers` entry.
  const register = <M extends PromMetric>(metric: M): M => {
    registry.registerMetric(metric);
    return metric;
  };
  const counter = (name: string, help: string) => register(new client.Counter({ name, help, registers: [] }));
  const histogram = (name: string, help: string) =>
    register(new client.Histogram({ name, help, registers: [] }));
  const N = METRIC_NAMES;
  const usersCreated = counter(N.usersCreated, 'Number of created users');
  const userCreateSeconds = histogram(N.userCreateSeconds, 'Histogram of user creation time in seconds');
  const userCreateErrors = counter(N.userCreateErrors, 'Number of users created with errors');
  const usersUpdated = counter(N.usersUpdated, 'Number of updated users');
  const userUpdateSeconds = histogram(N.userUpdateSeconds, 'Histogram of user updating time in seconds');
  const userUpdateErrors = counter(N.userUpdateErrors, 'Number of users updated with errors');
  const databasesCreated = counter(N.databasesCreated, 'Number of created databases');
  const provisioningErrors = counter(N.provisioningErrors, 'Number of failed database provisioning');
  const passwordsRotated = counter(N.passwordsRotated, 'Number of rotated passwords');
  const passwordRotateSeconds = histogram(
    N.passwordRotateSeconds,
    'Histogram of password rotation time in seconds',
  );
  const passwordRotateErrors = counter(N.passwordRotateErrors, 'Number of passwords rotated with errors');
  const claimsLoaded = counter(N.claimsLoaded, 'Total DBClaims loaded');
  const claimLoadSeconds = histogram(N.claimLoadSeconds, 'Time to load a DBClaim');
  const claimLoadErrors = counter(N.claimLoadErrors, 'Total DBClaim load errors');
  const gauge = (name: string, help: string, labelNames: readonly string[] = ['claim']) =>
    register(new client.Gauge({ name, help, labelNames: [...labelNames], registers: [] }));
  const claims = gauge(N.claims, 'DBClaims by the state they ended the last pass in', ['state']);
  for (const state of CLAIM_STATES) claims.set({ state }, 0);
  const migrationsStarted = counter(N.migrationsStarted, 'Online migrations (instance changes) started');
  const migrationsCompleted = counter(N.migrationsCompleted, 'Online migrations completed');
  const migrationsFailed = counter(N.migrationsFailed, 'Online migration passes that failed');
  const lagBytes = gauge(N.migrationLagBytes, 'Replication lag of a claim migration in WAL bytes');
  const lagSeconds = gauge(N.migrationLagSeconds, 'Replication lag of a claim migration in seconds');
  const cutoverWait = gauge(
    N.migrationCutoverWaitSeconds,
    'Seconds from streaming to cutover of the last migration of a claim, by what started the cutover',
    ['claim', 'strategy'],
  );
  const writePause = gauge(
    N.migrationWritePauseSeconds,
    'Longest write pause on the source during the last migration of a claim',
  );
  return {
    usersCreated(count, seconds) {
      usersCreated.inc(count);
      userCreateSeconds.observe(seconds);
    },
    provisioningError: () => provisioningErrors.inc(),
    userCreateError: () => userCreateErrors.inc(),
    passwordRotated(seconds) {
      passwordsRotated.inc();
      passwordRotateSeconds.observe(seconds);
      usersUpdated.inc();
      userUpdateSeconds.observe(seconds);
    },
    passwordRotateError() {
      passwordRotateErrors.inc();
      userUpdateErrors.inc();
    },
    claimLoaded(seconds) {
      claimsLoaded.inc();
      claimLoadSeconds.observe(seconds);
    },
    claimLoadError: () => claimLoadErrors.inc(),
    databaseCreated: () => databasesCreated.inc(),
    claimStates(counts) {
      for (const state of CLAIM_STATES) claims.set({ state }, counts[state] ?? 0);
    },
    migrationStarted: () => migrationsStarted.inc(),
    migrationCompleted: () => migrationsCompleted.inc(),
    migrationFailed: () => migrationsFailed.inc(),
    migrationLag(claim, bytes, seconds) {
      if (bytes !== null) lagBytes.set({ claim }, bytes);
      if (seconds !== null) lagSeconds.set({ claim }, seconds);
    },
    migrationCutover(claim, strategy, waitSeconds, longestWritePauseSeconds) {
      cutoverWait.set({ claim, strategy }, waitSeconds);
      writePause.set({ claim }, longestWritePauseSeconds);
    },
  };
}
