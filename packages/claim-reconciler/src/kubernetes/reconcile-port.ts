/**
 * The narrow port between the Kubernetes controller and the reconcile core: what the
 * controller needs of one claim's reconcile, and what the reconcile needs of the cluster
 * (a place to publish the secret, the state recorded on the claim). Kept off the package's
 * public surface so the core can be reshaped (observe → plan → apply) behind it.
 */
import type { ClaimStatus } from '../claim-status.js';
import type { DatabaseClaim } from '../claim-schema.js';
import type { ClaimResult } from '../reconciler.js';

/** Secret keys → values (UTF-8 text). Never logged. */
export type SecretData = Readonly<Record<string, string>>;

/** The claim's published Secret. */
export interface SecretSink {
  /** What the Secret holds now, or undefined when there is none (or another owner's). */
  read(): Promise<SecretData | undefined>;
  /** Creates the Secret or updates it in place; resolves whether anything changed. */
  publish(data: SecretData): Promise<boolean>;
  /** Deletes the Secret (missing is fine). */
  remove(): Promise<void>;
}

/** The reconcile state the claim's `status` recorded last time (binding, users, times). */
export interface StatusSource {
  read(): ClaimStatus | undefined;
}

/** What the reconcile needs of the cluster for one claim. */
export interface ClaimIO {
  readonly secret: SecretSink;
  readonly status: StatusSource;
  /** Keys (`namespace/name`) of every other claim the controller knows, with its state. */
  readonly others: () => ReadonlyArray<{ key: string; status: ClaimStatus | undefined }>;
}

/** Whether an error may go away on its own (retry with backoff) or needs a claim change. */
export type ReconcileErrorKind = 'retryable' | 'terminal';

/** An error kept as a value until the edge (status condition, event). Never a password. */
export interface ReconcileError {
  readonly kind: ReconcileErrorKind;
  readonly message: string;
}

/** The result of one claim's reconcile, shaped like controller-runtime's `Result`. */
export interface ClaimReconcileResult {
  /** What happened, as the folder mode reports it. */
  readonly outcome: ClaimResult;
  readonly actions: readonly string[];
  /** The state to record on the claim's status (undefined: leave it as it is). */
  readonly status: ClaimStatus | undefined;
  /** Come back after this long even if nothing changes (rotation due, pending clean-up). */
  readonly requeueAfterMillis?: number;
  readonly error?: ReconcileError;
}

/** One reconcile of one claim; the controller never runs two for the same claim at once. */
export interface ClaimReconcilePort {
  /** Brings the claim's database, users and Secret to what the claim asks for. */
  reconcile(claim: DatabaseClaim, io: ClaimIO): Promise<ClaimReconcileResult>;
  /** The claim is being deleted: apply its deletion policy. `deleted` when done. */
  finalize(claim: DatabaseClaim, io: ClaimIO): Promise<ClaimReconcileResult>;
}
