import type { LifecycleOptions } from 'hotload-core';
import type { PgProbeClient } from './knex-driver.js';

/**
 * The `hotload` block of a Knex config handled by {@link HotloadPgClient}: hotload-core's
 * one lifecycle options shape (`source`, `drainTimeoutMillis`, `verifyTimeoutMillis`,
 * `verifyRetryInitialMillis`, `verifyRetryMaxMillis`, `credentialWaitMillis`, `watcher`,
 * `name`, `metrics`, `logger`, `prepare`). `prepare` gets the verify connection, a `pg.Client`.
 */
export type HotloadKnexOptions = LifecycleOptions<PgProbeClient>;

/** Options renamed when hotload-knex moved onto hotload-core's lifecycle (see CHANGELOG.md). */
const RENAMED: Readonly<Record<string, string>> = {
  retryInitialDelayMillis: 'verifyRetryInitialMillis',
  retryMaxDelayMillis: 'verifyRetryMaxMillis',
  debounceMillis: 'watcher.debounceMillis',
};

/** Rejects an option under its old name with the new one, instead of silently ignoring it. */
export function rejectRenamedOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null) return;
  for (const [old, renamed] of Object.entries(RENAMED)) {
    if (old in options) throw new TypeError(`hotload-knex: hotload.${old} was renamed to hotload.${renamed}`);
  }
}
