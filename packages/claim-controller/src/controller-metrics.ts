/**
 * What the controller exports beside the reconciler's own metrics, under the names
 * controller-runtime and client-go use (so existing dashboards and alerts apply):
 * reconciles by result and their duration, reconcile errors, the work-queue depth; and it
 * feeds the claim gauge the folder mode sets after each pass (`dbclaim_claims{state}`, the
 * reconciler metrics' `claimStates`) from each claim's last outcome. `dbclaim_oldest_password_age_seconds` and
 * `dbclaim_password_rotation_period_seconds` let an alert say "rotation overdue";
 * `dbclaim_unreadable_records` that a claim record was edited into something else.
 * `deploy/monitoring/alerts.yaml` is written against these names; a test checks it against a
 * scrape. The leader election metrics are here too ({@link leaderElectionMetrics}).
 */

import type { ClaimResult, ReconcilerConfig, ReconcilerMetrics } from 'hotload-claim-reconciler';
import type { PromClientModule, PromRegistry } from 'hotload-core';
import type { ClaimController, KeyReconciled } from './claim-controller.js';

/** The `controller` label of controller-runtime's metrics. */
const CONTROLLER = 'databaseclaim';

/** Outcomes after which the claim no longer exists: it leaves the claim-state gauge. */
const GONE_OUTCOMES = new Set(['gone', 'finalized']);

/** Registers the controller's metrics in `registry` and keeps them from `controller`'s events. */
export function registerControllerMetrics(
  client: Pick<PromClientModule, 'Counter' | 'Histogram' | 'Gauge'>,
  registry: PromRegistry,
  controller: ClaimController,
  reconcilerMetrics: ReconcilerMetrics,
  config: () => ReconcilerConfig,
  now: () => number = Date.now,
): void {
  const reconciles = new client.Counter({
    name: 'controller_runtime_reconcile_total',
    help: 'Total number of reconciliations per controller and result',
    labelNames: ['controller', 'result'],
    registers: [],
  });
  const errors = new client.Counter({
    name: 'controller_runtime_reconcile_errors_total',
    help: 'Total number of reconciliation errors per controller',
    labelNames: ['controller'],
    registers: [],
  });
  const duration = new client.Histogram({
    name: 'controller_runtime_reconcile_time_seconds',
    help: 'Length of time per reconciliation per controller',
    labelNames: ['controller'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [],
  });
  // Each claim's last state, and how many claims are in each: kept as they change, so a
  // reconcile costs O(1) here rather than a count over every claim.
  const lastOutcome = new Map<string, ClaimResult>();
  const counts: Partial<Record<ClaimResult, number>> = {};
  const depth = new client.Gauge({
    name: 'workqueue_depth',
    help: 'Current depth of the work queue',
    labelNames: ['name'],
    registers: [],
    collect() {
      this.set({ name: CONTROLLER }, controller.queueDepth);
    },
  });
  const oldestPassword = new client.Gauge({
    name: 'dbclaim_oldest_password_age_seconds',
    help: 'Age of the oldest active password among the claims (rotation overdue when far above the period)',
    registers: [],
    collect() {
      let oldest = 0;
      for (const claim of controller.claims()) {
        const updated = claim.status?.userUpdatedAt;
        if (typeof updated === 'string') oldest = Math.max(oldest, (now() - Date.parse(updated)) / 1000);
      }
      this.set(oldest);
    },
  });
  const period = new client.Gauge({
    name: 'dbclaim_password_rotation_period_seconds',
    help: 'The configured password rotation period',
    registers: [],
    collect() {
      this.set(config().password.rotationPeriodMinutes * 60);
    },
  });
  const unreadableRecords = new client.Gauge({
    name: 'dbclaim_unreadable_records',
    help: 'Claim record ConfigMaps that do not parse (left as they are; a vanished claim they record is not cleaned up)',
    registers: [],
    collect() {
      this.set(controller.unreadableRecords.length);
    },
  });
  for (const metric of [reconciles, errors, duration, depth, oldestPassword, period, unreadableRecords])
    registry.registerMetric(metric);
  for (const result of ['success', 'error', 'requeue']) reconciles.inc({ controller: CONTROLLER, result }, 0);
  errors.inc({ controller: CONTROLLER }, 0);

  controller.on('reconciled', (event: KeyReconciled) => {
    const failed = event.error !== undefined;
    reconciles.inc({ controller: CONTROLLER, result: failed ? 'error' : 'success' });
    if (failed) errors.inc({ controller: CONTROLLER });
    if (event.seconds !== undefined) duration.observe({ controller: CONTROLLER }, event.seconds);
    const before = lastOutcome.get(event.key);
    if (before !== undefined) counts[before] = (counts[before] ?? 1) - 1;
    if (GONE_OUTCOMES.has(event.outcome)) lastOutcome.delete(event.key);
    else {
      const state = event.outcome === 'invalid' ? 'error' : (event.outcome as ClaimResult);
      lastOutcome.set(event.key, state);
      counts[state] = (counts[state] ?? 0) + 1;
    }
    reconcilerMetrics.claimStates?.(counts);
  });
}

/**
 * Leader election metrics: `leader_election_master_status{name}` (1 while this replica
 * holds the Lease; client-go's name, so existing "no leader" alerts work) and
 * `leader_election_errors_total{name}` (failed acquire or renew attempts).
 */
export function leaderElectionMetrics(
  client: Pick<PromClientModule, 'Gauge' | 'Counter'>,
  registry: PromRegistry,
  name: string,
): { leading(leading: boolean): void; failed(): void } {
  const status = new client.Gauge({
    name: 'leader_election_master_status',
    help: 'Whether this replica holds the leader election Lease (1) or not (0)',
    labelNames: ['name'],
    registers: [],
  });
  const errors = new client.Counter({
    name: 'leader_election_errors_total',
    help: 'Failed attempts to acquire or renew the leader election Lease',
    labelNames: ['name'],
    registers: [],
  });
  registry.registerMetric(status);
  registry.registerMetric(errors);
  status.set({ name }, 0);
  errors.inc({ name }, 0);
  return {
    leading: (leading) => status.set({ name }, leading ? 1 : 0),
    failed: () => errors.inc({ name }),
  };
}
