/**
 * Metrics of the database controller design ("Metrics/Telemetry"), as a small interface the
 * reconciler calls, with a Prometheus implementation on the optional `prom-client` peer.
 */
import type * as PromClient from 'prom-client';

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
}

/** Metric names, prefixed `dbclaim_`. */
export const METRIC_NAMES = {
  usersCreated: 'dbclaim_users_created_total',
  userCreateSeconds: 'dbclaim_user_create_duration_seconds',
  provisioningErrors: 'dbclaim_provisioning_errors_total',
  userCreateErrors: 'dbclaim_user_create_errors_total',
  passwordsRotated: 'dbclaim_passwords_rotated_total',
  passwordRotateSeconds: 'dbclaim_password_rotate_duration_seconds',
  passwordRotateErrors: 'dbclaim_password_rotate_errors_total',
  claimsLoaded: 'dbclaim_claims_loaded_total',
  claimLoadSeconds: 'dbclaim_claim_load_duration_seconds',
  claimLoadErrors: 'dbclaim_claim_load_errors_total',
} as const;

/**
 * Prometheus metrics registered in `registry`. Pass the `prom-client` module you use, so
 * this package does not load its own copy: `prometheusMetrics(await import('prom-client'), registry)`.
 */
export function prometheusMetrics(
  client: Pick<typeof PromClient, 'Counter' | 'Histogram'>,
  registry: PromClient.Registry,
): ReconcilerMetrics {
  const counter = (name: string, help: string) => new client.Counter({ name, help, registers: [registry] });
  const histogram = (name: string, help: string) =>
    new client.Histogram({ name, help, registers: [registry] });
  const usersCreated = counter(METRIC_NAMES.usersCreated, 'Total database users created');
  const userCreateSeconds = histogram(METRIC_NAMES.userCreateSeconds, 'Time to create a new database user');
  const provisioningErrors = counter(METRIC_NAMES.provisioningErrors, 'Total database provisioning errors');
  const userCreateErrors = counter(METRIC_NAMES.userCreateErrors, 'Total database users created with errors');
  const passwordsRotated = counter(METRIC_NAMES.passwordsRotated, 'Total passwords rotated');
  const passwordRotateSeconds = histogram(METRIC_NAMES.passwordRotateSeconds, 'Time to rotate user password');
  const passwordRotateErrors = counter(
    METRIC_NAMES.passwordRotateErrors,
    'Total password rotated with error',
  );
  const claimsLoaded = counter(METRIC_NAMES.claimsLoaded, 'Total DBClaims loaded');
  const claimLoadSeconds = histogram(METRIC_NAMES.claimLoadSeconds, 'Time to load a DBClaim');
  const claimLoadErrors = counter(METRIC_NAMES.claimLoadErrors, 'Total DBClaim load errors');
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
    },
    passwordRotateError: () => passwordRotateErrors.inc(),
    claimLoaded(seconds) {
      claimsLoaded.inc();
      claimLoadSeconds.observe(seconds);
    },
    claimLoadError: () => claimLoadErrors.inc(),
  };
}
