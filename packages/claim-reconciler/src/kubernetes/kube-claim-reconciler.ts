/**
 * The controller's driver of the per-claim reconcile core: what the folder mode's pass
 * builds for a whole set of claims (master connections, usage index, conflicts), built
 * here for one claim from the statuses of every claim the controller knows. Master
 * connections are kept across reconciles (one pool per instance and login) and closed on
 * {@link KubeClaimReconciler.close}.
 */
import type { ClaimContext } from '../core/claim-context.js';
import { deleteClaim } from '../core/claim-deletion.js';
import type { ClaimReconcile } from '../core/claim-outcome.js';
import type { ClaimPorts } from '../core/claim-ports.js';
import { desiredBinding, reconcileClaim, recordClaimError } from '../core/claim-reconcile.js';
import type { DatabaseClaim } from '../core/claim-schema.js';
import type { Binding, ClaimStatus } from '../core/claim-status.js';
import { MasterConnections } from '../core/master-connection.js';
import type { ReconcilerMetrics } from '../core/metrics.js';
import { terminal } from '../core/reconcile-result.js';
import type { ReconcilerConfig } from '../core/reconciler-config.js';
import type { StepHook } from '../core/steps.js';
import { UsageIndex } from '../core/usage-index.js';
import { sameUsers, type UsersWanted, userConflictMessage, usersOwner } from '../core/user-conflicts.js';
import { ALLOW_DELETE_ANNOTATION } from './claim-resource.js';
import type { ClaimIdentity, ClaimReconcilePort, FinalizeOptions } from './reconcile-port.js';

/** Options of {@link KubeClaimReconciler}. */
export interface KubeClaimReconcilerOptions {
  /** The reconciler config to start with (replace it with {@link KubeClaimReconciler.setConfig}). */
  readonly config: ReconcilerConfig;
  /** Clock (password ages and status times). Default: `new Date()`. */
  readonly now?: () => Date;
  /** Announced before every state-changing step (crash tests, dry runs). */
  readonly onStep?: StepHook;
  /** Where to count provisioning, rotations and errors; none when absent. */
  readonly metrics?: ReconcilerMetrics;
  /** Master connections per instance; default 4. */
  readonly maxConnectionsPerInstance?: number;
  /**
   * The publisher recorded on each claim's base role (`DEFAULT_PUBLISHER_ID` by
   * default): claims a folder-mode output (or another cluster) publishes are refused.
   */
  readonly publisherId?: string;
  /** Record this publisher even where another one is recorded (migrating to the controller). */
  readonly takeOver?: boolean;
}

/** Publisher id of the controller unless told otherwise. */
export const DEFAULT_PUBLISHER_ID = 'kubernetes:hotload-claim-reconciler';

/** {@link ClaimReconcilePort} over `reconcileClaim` / `deleteClaim`. */
export class KubeClaimReconciler implements ClaimReconcilePort {
  #options: KubeClaimReconcilerOptions;
  readonly #connections: MasterConnections;

  constructor(options: KubeClaimReconcilerOptions) {
    this.#options = options;
    this.#connections = new MasterConnections(options.maxConnectionsPerInstance ?? 4);
  }

  /** {@inheritDoc ClaimReconcilePort.publisherId} */
  get publisherId(): string {
    return this.#options.publisherId ?? DEFAULT_PUBLISHER_ID;
  }

  /** Uses a new config (re-read from its ConfigMap) from the next reconcile on. */
  setConfig(config: ReconcilerConfig): void {
    this.#options = { ...this.#options, config };
  }

  /** {@inheritDoc ClaimReconcilePort.reconcile} */
  async reconcile(claim: DatabaseClaim, ports: ClaimPorts): Promise<ClaimReconcile> {
    const statuses = await ports.statuses.list();
    const binding = desiredBinding(this.#options.config, claim);
    const usage = new UsageIndex();
    for (const status of statuses) {
      for (const retired of status.retired) usage.add(retired);
      if (status.claim !== claim.key && status.binding) usage.add(status.binding);
    }
    if (binding) usage.add(binding);
    const context = this.#context(ports, usage);
    const owner = binding && this.#usersOwner(claim, binding, statuses, ports);
    if (binding && owner !== undefined && owner !== claim.key)
      return recordClaimError(context, claim, terminal(userConflictMessage(binding, owner)), binding.label);
    return reconcileClaim(context, claim, false);
  }

  /**
   * Who keeps the users `claim` wants, by the one rule (`user-conflicts.ts`): the claims
   * whose status records them, and the other claims that want them (the driver's
   * `otherClaims`), are the contenders.
   */
  #usersOwner(
    claim: DatabaseClaim,
    binding: Binding,
    statuses: readonly ClaimStatus[],
    ports: ClaimPorts,
  ): string | undefined {
    const contenders = new Map<string, UsersWanted>();
    for (const other of ports.otherClaims?.(claim.userName) ?? []) {
      const wanted = desiredBinding(this.#options.config, other);
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

  /** {@inheritDoc ClaimReconcilePort.finalize} */
  async finalize(claim: ClaimIdentity, ports: ClaimPorts, options: FinalizeOptions): Promise<ClaimReconcile> {
    const statuses = await ports.statuses.list();
    const own = await ports.statuses.read(claim.namespace, claim.secretName);
    const sink = ports.secretFor(claim.namespace, claim.secretName);
    if (!own || own.claim !== claim.key) {
      // Nothing was ever recorded for this claim: at most a Secret to remove.
      await sink.remove();
      return {
        outcome: { claim: claim.key, result: 'deleted', actions: [], secretDirectory: sink.location },
      };
    }
    const usage = new UsageIndex();
    for (const status of statuses) {
      for (const retired of status.retired) usage.add(retired);
      if (status.binding) usage.add(status.binding);
    }
    const keepDataBecause = options.allowDataDeletion
      ? undefined
      : `the claim has no annotation ${ALLOW_DELETE_ANNOTATION}: "true"`;
    return deleteClaim({ ...this.#context(ports, usage), keepDataBecause }, own);
  }

  /** Closes the master connections. */
  async close(): Promise<void> {
    await this.#connections.closeAll();
  }

  #context(ports: ClaimPorts, usage: UsageIndex): ClaimContext {
    const { config, onStep, metrics, now, takeOver } = this.#options;
    return {
      config,
      connections: this.#connections,
      usage,
      ports,
      onStep,
      metrics,
      now: now?.() ?? new Date(),
      publisher: this.publisherId,
      takeOver,
    };
  }
}
