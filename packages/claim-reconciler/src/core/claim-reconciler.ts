/**
 * The one implementation of the reconcile port ({@link ClaimReconcilePort}), used by both
 * modes: the folder pass calls it for each claim of a pass, the Kubernetes controller for
 * each claim its work queue hands out. It builds what one claim's reconcile needs to know
 * about the others (which databases and roles are in use, who keeps contested login users)
 * from the stored statuses and the other claims the driver sees, then runs the per-claim
 * core: `reconcileClaim` (observe → plan → apply) or `deleteClaim`.
 *
 * Master connections (one hotload-pg pool per instance and login) are kept across
 * reconciles and closed by {@link ClaimReconciler.close}.
 */

import type { MigrationOptions } from '../migration/online-migration.js';
import type { Binding } from './binding.js';
import type { ClaimContext } from './claim-context.js';
import { deleteClaim } from './claim-deletion.js';
import type { ClaimReconcile } from './claim-outcome.js';
import type { ClaimPorts } from './claim-ports.js';
import { desiredBinding, reconcileClaim, recordClaimError } from './claim-reconcile.js';
import type { DatabaseClaim } from './claim-schema.js';
import type { ClaimStatus } from './claim-status.js';
import { MasterConnections } from './master-connection.js';
import type { ReconcilerMetrics } from './metrics.js';
import type { ClaimIdentity, ClaimReconcilePort, FinalizeOptions } from './reconcile-port.js';
import { type ReconcileError, terminal } from './reconcile-result.js';
import type { ReconcilerConfig } from './reconciler-config.js';
import { afterFirst, type StepHook } from './steps.js';
import { UsageIndex } from './usage-index.js';
import { sameUsers, type UsersWanted, userConflictMessage, usersOwner } from './user-conflicts.js';

/** Options of {@link ClaimReconciler}. */
export interface ClaimReconcilerOptions {
  /** The reconciler config to start with (replace it with {@link ClaimReconciler.setConfig}). */
  readonly config: ReconcilerConfig;
  /** Clock (password ages and status times). Default: `new Date()`. */
  readonly now?: () => Date;
  /** Announced before every state-changing step (crash tests, dry runs). */
  readonly onStep?: StepHook;
  /** Where to count provisioning, rotations and errors; none when absent. */
  readonly metrics?: ReconcilerMetrics;
  /** Tunables of online migrations (instance changes). */
  readonly migration?: MigrationOptions;
  /** Master connections per instance and login; default 4. */
  readonly maxConnectionsPerInstance?: number;
  /**
   * The publisher recorded on each claim's base role ({@link ClaimPorts.publisherId}):
   * claims another publisher recorded are refused. Absent: none is recorded (a pass that
   * provisions nothing).
   */
  readonly publisherId?: string;
  /** Record this publisher even where another one is recorded (that output is gone for good). */
  readonly takeOver?: boolean;
}

/** What the driver already observed for one reconcile, so it is not read again per claim. */
export interface ClaimObservation {
  /** Every stored status ({@link StatusStore.list}); read from the ports when absent. */
  readonly statuses?: readonly ClaimStatus[];
  /** Rotate the claim's password now, whatever its age. */
  readonly rotate?: boolean;
}

/** What the driver knows when it deletes a gone claim ({@link ClaimReconciler.delete}). */
export interface ClaimDeletion {
  /** Every stored status; read from the ports when absent. */
  readonly statuses?: readonly ClaimStatus[];
  /** The claims present (a pass's claims): where they want to be counts as in use. */
  readonly claims?: readonly DatabaseClaim[];
  /** See {@link FinalizeOptions.keepDataBecause}. */
  readonly keepDataBecause?: string;
}

/** See the module comment. */
export class ClaimReconciler implements ClaimReconcilePort {
  #options: ClaimReconcilerOptions;
  readonly #connections: MasterConnections;

  constructor(options: ClaimReconcilerOptions) {
    this.#options = options;
    this.#connections = new MasterConnections(options.maxConnectionsPerInstance ?? 4);
  }

  /** {@inheritDoc ClaimReconcilePort.awaitsBeforeFirstChange} */
  readonly awaitsBeforeFirstChange = true;

  /** {@inheritDoc ClaimReconcilePort.publisherId} */
  get publisherId(): string | undefined {
    return this.#options.publisherId;
  }

  /** The config in force. */
  get config(): ReconcilerConfig {
    return this.#options.config;
  }

  /** Uses a new config (re-read from its file or ConfigMap) from the next reconcile on. */
  setConfig(config: ReconcilerConfig): void {
    this.#options = { ...this.#options, config };
  }

  /** {@inheritDoc ClaimReconcilePort.reconcile} */
  async reconcile(
    claim: DatabaseClaim,
    ports: ClaimPorts,
    observed: ClaimObservation = {},
  ): Promise<ClaimReconcile> {
    const statuses = observed.statuses ?? (await ports.statuses.list());
    const binding = desiredBinding(this.config, claim);
    const others = (ports.otherClaims?.(claim.userName) ?? []).filter((other) => other.key !== claim.key);
    const usage = this.#usage(statuses, claim.key, others);
    if (binding) usage.add(binding);
    const context = this.#context(ports, usage);
    const owner = binding && this.#usersOwner(claim, binding, statuses, others);
    if (binding && owner !== undefined && owner !== claim.key)
      return recordClaimError(context, claim, terminal(userConflictMessage(binding, owner)), binding.label);
    return reconcileClaim(context, claim, observed.rotate ?? false);
  }

  /** {@inheritDoc ClaimReconcilePort.finalize} */
  async finalize(claim: ClaimIdentity, ports: ClaimPorts, options: FinalizeOptions): Promise<ClaimReconcile> {
    const own = await ports.statuses.read(claim.namespace, claim.secretName);
    if (!own || own.claim !== claim.key) {
      // Nothing was ever recorded for this claim: at most a secret to remove.
      const sink = ports.secretFor(claim.namespace, claim.secretName);
      await sink.remove();
      return {
        outcome: { claim: claim.key, result: 'deleted', actions: [], secretLocation: sink.location },
      };
    }
    return this.delete(own, ports, options);
  }

  /**
   * Applies the deletion policy of the claim whose status is `status` (it is gone). The
   * bindings every stored status still records, and where the claims in view want to be,
   * count as in use, so nothing another claim uses or is about to use is dropped.
   */
  async delete(status: ClaimStatus, ports: ClaimPorts, options: ClaimDeletion = {}): Promise<ClaimReconcile> {
    const statuses = options.statuses ?? (await ports.statuses.list());
    const usage = this.#usage(statuses, undefined, options.claims ?? []);
    return deleteClaim({ ...this.#context(ports, usage), keepDataBecause: options.keepDataBecause }, status);
  }

  /** Records `error` in the claim's status, keeping everything else (the secret stays as is). */
  recordError(
    claim: DatabaseClaim,
    ports: ClaimPorts,
    error: ReconcileError,
    matchedLabel?: string,
  ): Promise<ClaimReconcile> {
    return recordClaimError({ ports, onStep: this.#options.onStep }, claim, error, matchedLabel ?? null);
  }

  /** Closes the master connections. */
  async close(): Promise<void> {
    await this.#connections.closeAll();
  }

  /**
   * Which databases and role sets are in use: every retired binding, the recorded binding
   * of every claim but `self`, and where the other claims in view want to be.
   */
  #usage(
    statuses: readonly ClaimStatus[],
    self: string | undefined,
    others: readonly DatabaseClaim[],
  ): UsageIndex {
    const usage = new UsageIndex();
    for (const status of statuses) {
      for (const retired of status.retired) usage.add(retired);
      if (status.claim !== self && status.binding) usage.add(status.binding);
    }
    for (const other of others) {
      const wanted = desiredBinding(this.config, other);
      if (wanted) usage.add(wanted);
    }
    return usage;
  }

  /**
   * Who keeps the users `claim` wants, by the one rule (`user-conflicts.ts`): the claims
   * whose status records them, and the other claims in view that want them, contend.
   */
  #usersOwner(
    claim: DatabaseClaim,
    binding: Binding,
    statuses: readonly ClaimStatus[],
    others: readonly DatabaseClaim[],
  ): string | undefined {
    const contenders = new Map<string, UsersWanted>();
    for (const other of others) {
      const wanted = desiredBinding(this.config, other);
      if (wanted && sameUsers(wanted, binding))
        contenders.set(other.key, { claim: other.key, binding: wanted, recorded: false });
    }
    for (const status of statuses) {
      if (status.binding && sameUsers(status.binding, binding))
        contenders.set(status.claim, { claim: status.claim, binding: status.binding, recorded: true });
    }
    if (!contenders.has(claim.key)) contenders.set(claim.key, { claim: claim.key, binding, recorded: false });
    return usersOwner([...contenders.values()]);
  }

  #context(ports: ClaimPorts, usage: UsageIndex): ClaimContext {
    const { config, onStep, metrics, migration, now, publisherId, takeOver } = this.#options;
    return {
      config,
      connections: this.#connections,
      usage,
      ports,
      // Every change waits for what the driver needs in place first (ClaimPorts.beforeFirstChange).
      onStep: ports.beforeFirstChange ? afterFirst(async () => ports.beforeFirstChange?.(), onStep) : onStep,
      metrics,
      migration,
      now: now?.() ?? new Date(),
      publisher: publisherId,
      takeOver,
    };
  }
}
