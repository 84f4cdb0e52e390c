/**
 * hotload-claim-controller: the claim reconciler as a Kubernetes controller. DatabaseClaim
 * custom resources are watched, reconciled by the reconciler's core (`ClaimReconciler` from
 * hotload-claim-reconciler) and published as Secrets; statuses, Events, a finalizer, leader
 * election and metrics as controller-runtime does them. The bin is `cli.ts`.
 */

export { type ClaimRef, readClaim } from './claim-api.js';
export {
  ClaimController,
  type ClaimControllerOptions,
  type KeyReconciled,
} from './claim-controller.js';
export { claimCustomResourceDefinition } from './claim-crd.js';
export type { UnreadableRecord } from './claim-records.js';
export {
  ALLOW_DELETE_ANNOTATION,
  allowsDataDeletion,
  CLAIM_FINALIZER,
  CLAIM_GROUP,
  CLAIM_PLURAL,
  CLAIM_RESOURCE,
  CLAIM_VERSION,
  type ClaimCondition,
  type ClaimResource,
  type ClaimResourceStatus,
  claimFromResource,
  DEFAULT_PUBLISHER_ID,
} from './claim-resource.js';
export { type ConfigWatch, watchReconcilerConfig } from './config-watch.js';
export { ControllerLoop, type ControllerLoopOptions, type Reconcile } from './controller-loop.js';
export { type KubeClients, kubeClients, kubeClientsForUrl } from './kube-clients.js';
export {
  KubeSecretSink,
  MANAGED_BY_LABEL,
  PUBLISHED_AT_ANNOTATION,
  SecretOwnershipError,
} from './kube-secret-sink.js';
export { type LeaderElectionOptions, LeaderElector } from './leader-election.js';
export { type LeaderGate, runWhileLeading } from './leader-gate.js';
export { needsReconcile, type ReconcileView, reconcileView } from './reconcile-predicate.js';
export {
  type InformerChange,
  type NamedObject,
  type ResourceDescription,
  ResourceInformer,
  type ResourceInformerOptions,
  resourceKey,
} from './resource-informer.js';
export { type BackoffSettings, type WorkOutcome, WorkQueue } from './work-queue.js';
