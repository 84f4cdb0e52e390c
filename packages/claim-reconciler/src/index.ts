/**
 * hotload-claim-reconciler: DatabaseClaim documents → databases, rotating login users and
 * kubelet-style secret folders that hotload watches. Library entry; the CLI is `cli.ts`.
 */

export { deleteClaim } from './claim-deletion.js';
export { CANARY_SECRET_SUFFIX } from './claim-migration.js';
export type { ClaimReconcile } from './claim-outcome.js';
export type { ClaimPorts, SecretSink, StatusStore } from './claim-ports.js';
export {
  type ClaimContext,
  type CredentialObservation,
  type CredentialPlan,
  desiredBinding,
  type LoginTarget,
  nextRotationInMillis,
  type PlanInput,
  planCredentials,
  reconcileClaim,
} from './claim-reconcile.js';
export {
  CLAIM_API_VERSION,
  CLAIM_KIND,
  type DatabaseClaim,
  type DeletionPolicy,
  type LoadedClaims,
  loadClaimsFromDirectory,
  parseClaims,
} from './claim-schema.js';
export {
  type Binding,
  type ClaimStatus,
  FolderStatusStore,
  readStatus,
  STATUS_SUFFIX,
  statusPath,
} from './claim-status.js';
export { matchFragmentKey } from './fragment-matcher.js';
export { type ClaimRef, readClaim } from './kubernetes/claim-api.js';
export {
  ClaimController,
  type ClaimControllerOptions,
  type KeyReconciled,
} from './kubernetes/claim-controller.js';
export { claimCustomResourceDefinition } from './kubernetes/claim-crd.js';
export {
  ALLOW_DELETE_ANNOTATION,
  allowsDataDeletion,
  CLAIM_FINALIZER,
  CLAIM_GROUP,
  CLAIM_PLURAL,
  CLAIM_VERSION,
  type ClaimCondition,
  type ClaimResource,
  type ClaimResourceStatus,
  claimFromResource,
} from './kubernetes/claim-resource.js';
export { type ConfigWatch, watchReconcilerConfig } from './kubernetes/config-watch.js';
export { KubeClaimReconciler, type KubeClaimReconcilerOptions } from './kubernetes/kube-claim-reconciler.js';
export { type KubeClients, kubeClients, kubeClientsForUrl } from './kubernetes/kube-clients.js';
export {
  KubeSecretSink,
  MANAGED_BY_LABEL,
  PUBLISHED_AT_ANNOTATION,
  SecretOwnershipError,
} from './kubernetes/kube-secret-sink.js';
export { type LeaderElectionOptions, LeaderElector } from './kubernetes/leader-election.js';
export { type LeaderGate, runWhileLeading } from './kubernetes/leader-gate.js';
export type { ClaimIdentity, ClaimReconcilePort, FinalizeOptions } from './kubernetes/reconcile-port.js';
export { type InstanceTarget, MasterConnection, MasterConnections } from './master-connection.js';
export { CLAIM_STATES, METRIC_NAMES, prometheusMetrics, type ReconcilerMetrics } from './metrics.js';
export {
  CUTOVER_STRATEGIES,
  type CutoverReason,
  type CutoverSettings,
  type CutoverStrategy,
  DEFAULT_CUTOVER_SETTINGS,
} from './migration/cutover-settings.js';
export { MigrationRefusedError, ReplicationConflictError } from './migration/migration-errors.js';
export { MIGRATION_PHASES, type MigrationPhase, type MigrationState } from './migration/migration-state.js';
export type { MigrationOptions } from './migration/online-migration.js';
export type { SynchronousApplyUnavailable } from './migration/synchronous-apply.js';
export { generatePassword, meetsPasswordSettings } from './password-generator.js';
export { formatProblem, type Problem } from './problems.js';
export {
  type ClaimNames,
  claimNames,
  MANAGED_ROLE_MARKER,
  ProvisioningConflictError,
  publisherComment,
} from './provisioner.js';
export { folderPublisherId, PUBLISHER_ID_FILE } from './publisher-id.js';
export {
  EXIT_CODES,
  type ReconcileFilesOptions,
  type ReconcileFilesResult,
  reconcileFiles,
} from './reconcile-files.js';
export { type ReconcileError, type ReconcileResult, retryable, terminal } from './reconcile-result.js';
export {
  type ClaimOutcome,
  type ClaimResult,
  type PassOptions,
  type PassResult,
  Reconciler,
  type ReconcilerOptions,
} from './reconciler.js';
export {
  ConfigError,
  type FragmentKey,
  loadReconcilerConfig,
  MasterPasswordError,
  type MasterPasswordSource,
  type PasswordSettings,
  parseReconcilerConfig,
  type ReconcilerConfig,
  SSL_MODES,
  type SslModeSetting,
} from './reconciler-config.js';
export { VerificationError } from './rotation.js';
export {
  folderPorts,
  type PublishedCredentials,
  SECRET_FILE_MODE,
  SecretPublisher,
  secretDirectory,
  secretFiles,
} from './secret-publisher.js';
export { assertSafeIdentifier, assertSafeRoleName, UnsafeIdentifierError } from './sql-identifiers.js';
export type { Step, StepHook } from './steps.js';
export { UsageIndex } from './usage-index.js';
