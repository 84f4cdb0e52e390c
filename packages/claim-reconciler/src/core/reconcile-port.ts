/**
 * The narrow port between a driver (the folder pass, the Kubernetes controller) and the
 * per-claim reconcile core (`claim-reconcile.ts`, `claim-deletion.ts`): the driver hands one
 * claim and its {@link ClaimPorts} (where the secret goes, where statuses are kept), and
 * gets back a controller-runtime-shaped result (requeue after, retryable/terminal error).
 * {@link ClaimReconciler} is its one implementation.
 */
import type { ClaimReconcile } from './claim-outcome.js';
import type { ClaimPorts } from './claim-ports.js';
import type { DatabaseClaim } from './claim-schema.js';

/** Which claim, and which Secret it writes. */
export type ClaimIdentity = Pick<DatabaseClaim, 'key' | 'namespace' | 'secretName'>;

/** How a deleted claim is finalized. */
export interface FinalizeOptions {
  /**
   * Set when the claim may not drop data (the controller's deletion guard: no
   * `hotload-claim-reconciler/allow-delete: "true"` annotation), saying why: a `Delete`
   * policy then keeps the database and roles and disables the login users, and the text is
   * in the action and the Event. Absent: the deletion policy applies as written.
   */
  readonly keepDataBecause?: string;
}

/** One reconcile of one claim; the controller never runs two for the same claim at once. */
export interface ClaimReconcilePort {
  /** Who publishes ({@link ClaimPorts.publisherId}); absent when nothing is recorded. */
  readonly publisherId: string | undefined;
  /**
   * True when {@link ClaimReconcilePort.reconcile} awaits {@link ClaimPorts.beforeFirstChange}
   * before its first state-changing step: a driver may then start what must precede any
   * change beside the reconcile. Absent or false: the driver finishes it first.
   */
  readonly awaitsBeforeFirstChange?: boolean;
  /** Brings the claim's database, users and Secret to what the claim asks for. */
  reconcile(claim: DatabaseClaim, ports: ClaimPorts): Promise<ClaimReconcile>;
  /**
   * The claim is being deleted: apply its deletion policy (`deleted` when done). Only its
   * identity is needed (the recorded state decides), so a claim whose spec no longer
   * validates is cleaned up too.
   */
  finalize(claim: ClaimIdentity, ports: ClaimPorts, options: FinalizeOptions): Promise<ClaimReconcile>;
}
