/**
 * What the controller exports beside the reconciler's own metrics, under the names
 * controller-runtime and client-go use (so existing dashboards and alerts apply):
 * reconciles by result and their duration, reconcile errors, the work-queue depth; and it
 * feeds the claim gauge the folder mode sets after each pass (`dbclaim_claims{state}`, the
 * reconciler metrics' `claimStates`) from each claim's last outcome. `dbclaim_oldest_password_age_seconds` and
 * `dbclaim_password_rotation_period_seconds` let an alert say "rotation overdue".
 * `deploy/05-alerts.yaml` is written against these names; a test checks it against a scrape.
 */
import type { PromClientModule, PromRegistry } from 'hotload-core';
import type { ReconcilerMetrics } from '../metrics.js';
import type { ClaimResult } from '../reconciler.js';
import type { ReconcilerConfig } from '../reconciler-config.js';
import type { ClaimController, KeyReconciled } from './claim-controller.js';

/** The `controller` label of controller-runtime's metrics. */
const CONTROLLER = 'databaseclaim';

/** Outcomes that are not a reconcile result but still a claim's last word. */
const QUIET_OUTCOMES = new Set(['gone', 'finalized']);

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
  const lastOutcome = new Map<string, ClaimResult>();
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
  for (const metric of [reconciles, errors, duration, depth, oldestPassword, period])
    registry.registerMetric(metric);
  for (const result of ['success', 'error', 'requeue']) reconciles.inc({ controller: CONTROLLER, result }, 0);
  errors.inc({ controller: CONTROLLER }, 0);

  controller.on('reconciled', (event: KeyReconciled) => {
    const failed = event.error !== undefined;
    reconciles.inc({ controller: CONTROLLER, result: failed ? 'error' : 'success' });
    if (failed) errors.inc({ controller: CONTROLLER });
    if (event.seconds !== undefined) duration.observe({ controller: CONTROLLER }, event.seconds);
    if (QUIET_OUTCOMES.has(event.outcome)) lastOutcome.delete(event.key);
    else lastOutcome.set(event.key, event.outcome === 'invalid' ? 'error' : (event.outcome as ClaimResult));
    const counts: Partial<Record<ClaimResult, number>> = {};
    for (const outcome of lastOutcome.values()) counts[outcome] = (counts[outcome] ?? 0) + 1;
    reconcilerMetrics.claimStates?.(counts);
  });
}
