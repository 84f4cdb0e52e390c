/**
 * The narrow port between the Kubernetes controller and the per-claim reconcile core
 * (`claim-reconcile.ts`, `claim-deletion.ts`): the controller hands one claim and the
 * cluster's {@link ClaimPorts} (Secret sink, status store), and gets back a
 * controller-runtime-shaped result (requeue after, retryable/terminal error).
 */
import type { ClaimReconcile } from '../core/claim-outcome.js';
import type { ClaimPorts } from '../core/claim-ports.js';
import type { DatabaseClaim } from '../core/claim-schema.js';

/** Which claim, and which Secret it writes. */
export type ClaimIdentity = Pick<DatabaseClaim, 'key' | 'namespace' | 'secretName'>;

/** How a deleted claim is finalized. */
export interface FinalizeOptions {
  /**
   * Whether the claim allows dropping data (`hotload-claim-reconciler/allow-delete: "true"`).
   * When false, a `Delete` policy keeps the database and roles and disables the login users.
   */
  readonly allowDataDeletion: boolean;
}

/** One reconcile of one claim; the controller never runs two for the same claim at once. */
export interface ClaimReconcilePort {
  /** Who publishes ({@link ClaimPorts.publisherId}). */
  readonly publisherId: string;
  /** Brings the claim's database, users and Secret to what the claim asks for. */
  reconcile(claim: DatabaseClaim, ports: ClaimPorts): Promise<ClaimReconcile>;
  /**
   * The claim is being deleted: apply its deletion policy (`deleted` when done). Only its
   * identity is needed (the recorded state decides), so a claim whose spec no longer
   * validates is cleaned up too.
   */
  finalize(claim: ClaimIdentity, ports: ClaimPorts, options: FinalizeOptions): Promise<ClaimReconcile>;
}
