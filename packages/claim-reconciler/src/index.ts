/**
 * hotload-claim-reconciler: DatabaseClaim documents → databases, rotating login users and
 * kubelet-style secret folders that hotload watches. Library entry; the CLI is `cli.ts`.
 */

export { DATA_KEPT } from './core/binding-cleanup.js';
export { deleteClaim } from './core/claim-deletion.js';
export { CANARY_SECRET_SUFFIX } from './core/claim-migration.js';
export type { ClaimReconcile } from './core/claim-outcome.js';
export type { ClaimPorts, SecretSink, StatusStore } from './core/claim-ports.js';
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
} from './core/claim-reconcile.js';
export {
  type ClaimDeletion,
  type ClaimObservation,
  ClaimReconciler,
  type ClaimReconcilerOptions,
} from './core/claim-reconciler.js';
export {
  CLAIM_API_VERSION,
  CLAIM_KIND,
  CLAIM_NAME_PATTERNS,
  CLAIM_SPEC_SCHEMA,
  type DatabaseClaim,
  type DeletionPolicy,
  type LoadedClaims,
  parseClaimObject,
  parseClaims,
  USER_NAME_MAX_BYTES,
} from './core/claim-schema.js';
export type { Binding, ClaimStatus } from './core/claim-status.js';
export { matchFragmentKey } from './core/fragment-matcher.js';
export { type InstanceTarget, MasterConnection, MasterConnections } from './core/master-connection.js';
export { CLAIM_STATES, METRIC_NAMES, prometheusMetrics, type ReconcilerMetrics } from './core/metrics.js';
export {
  type HealthCheck,
  type HealthChecks,
  type MetricsServer,
  startMetricsServer,
} from './core/metrics-server.js';
export { generatePassword, meetsPasswordSettings } from './core/password-generator.js';
export { formatProblem, type Problem } from './core/problems.js';
export {
  type ClaimNames,
  claimNames,
  ProvisioningConflictError,
  publisherComment,
} from './core/provisioner.js';
export type { ClaimIdentity, ClaimReconcilePort, FinalizeOptions } from './core/reconcile-port.js';
export { type ReconcileError, type ReconcileResult, retryable, terminal } from './core/reconcile-result.js';
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
} from './core/reconciler-config.js';
export { MANAGED_ROLE_MARKER } from './core/role-marker.js';
export { VerificationError } from './core/rotation.js';
export {
  credentialsFromSecret,
  type PublishedCredentials,
  secretDiffers,
  secretFiles,
} from './core/secret-layout.js';
export { SeedSourceError } from './core/seed-endpoints.js';
export { describeSeedSource, type SeedSource } from './core/seed-source.js';
export {
  assertSafeIdentifier,
  assertSafeRoleName,
  MAX_IDENTIFIER_BYTES,
  SAFE_NAME,
  UnsafeIdentifierError,
} from './core/sql-identifiers.js';
export type { Step, StepHook } from './core/steps.js';
export { UsageIndex } from './core/usage-index.js';
export { loadClaimsFromDirectory } from './folder/claim-files.js';
export { FolderStatusStore, readStatus, STATUS_SUFFIX, statusPath } from './folder/folder-status-store.js';
export { folderPublisherId, PUBLISHER_ID_FILE } from './folder/publisher-id.js';
export {
  EXIT_CODES,
  type ReconcileFilesOptions,
  type ReconcileFilesResult,
  reconcileFiles,
} from './folder/reconcile-files.js';
export {
  type ClaimOutcome,
  type ClaimResult,
  type PassOptions,
  type PassResult,
  Reconciler,
  type ReconcilerOptions,
} from './folder/reconciler.js';
export {
  folderPorts,
  SECRET_FILE_MODE,
  SecretPublisher,
  secretDirectory,
} from './folder/secret-publisher.js';
export {
  CUTOVER_STRATEGIES,
  type CutoverReason,
  type CutoverSettings,
  type CutoverStrategy,
  DEFAULT_CUTOVER_SETTINGS,
} from './migration/cutover-settings.js';
export { MigrationRefusedError, ReplicationConflictError } from './migration/migration-errors.js';
export {
  MIGRATION_PHASES,
  type MigrationPhase,
  type MigrationState,
  storedMigration,
} from './migration/migration-state.js';
export type { MigrationOptions } from './migration/online-migration.js';
export type { ReplicaIdentityChoice } from './migration/replica-identity.js';
export type { SynchronousApplyUnavailable } from './migration/synchronous-apply.js';
