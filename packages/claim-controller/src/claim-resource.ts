/**
 * DatabaseClaim as a Kubernetes resource: where it lives in the API, the shape of its
 * `status` subresource, and its conversion into the reconciler's validated claim (the same
 * parser as the folder mode, so both accept exactly the same documents).
 */
import {
  CLAIM_API_VERSION,
  CLAIM_KIND,
  type ClaimStatus,
  type DatabaseClaim,
  formatProblem,
  parseClaimObject,
} from 'hotload-claim-reconciler';
import { type ResourceDescription, resourceKey } from './resource-informer.js';

/** API group of DatabaseClaim (the database controller's, so existing manifests apply). */
export const CLAIM_GROUP = 'persistance.atlas.infoblox.com';
/** API version served. */
export const CLAIM_VERSION = 'v1';
/** Resource (plural) name in API paths. */
export const CLAIM_PLURAL = 'databaseclaims';
/**
 * The annotation that allows the controller to drop data: with `deletionPolicy: Delete`, a
 * deleted claim's database and roles are dropped only when the claim carries
 * `hotload-claim-reconciler/allow-delete: "true"` (as Config Connector's deletion-policy
 * annotation, an explicit word on the object itself). Without it a plain `kubectl delete`
 * keeps the database, disables the login users and says so in a `DataKept` Event.
 */
export const ALLOW_DELETE_ANNOTATION = 'hotload-claim-reconciler/allow-delete';

/**
 * The publisher the controller records on each claim's base role unless told otherwise:
 * claims a folder-mode output (or another cluster) publishes are refused.
 */
export const DEFAULT_PUBLISHER_ID = 'kubernetes:hotload-claim-reconciler';

/** Whether `resource` carries {@link ALLOW_DELETE_ANNOTATION} set to `"true"`. */
export function allowsDataDeletion(resource: ClaimResource): boolean {
  return resource.metadata.annotations?.[ALLOW_DELETE_ANNOTATION] === 'true';
}

/** Finalizer the controller puts on every claim it manages. */
export const CLAIM_FINALIZER = 'persistance.atlas.infoblox.com/hotload-claim-reconciler';

/** A standard Kubernetes condition (`metav1.Condition`). */
export interface ClaimCondition {
  /**
   * `Synced`: the last reconcile of this generation went through; `Ready`: a Secret with
   * verified credentials is published.
   */
  readonly type: 'Ready' | 'Synced';
  /** Whether the condition holds. */
  readonly status: 'True' | 'False' | 'Unknown';
  /** A CamelCase reason, e.g. `Reconciled`, `SecretPublished`, `InvalidSpec`, `ReconcileError`. */
  readonly reason: string;
  /** Human-readable details (never a password). */
  readonly message: string;
  /** ISO time the status last changed (kept while the status stays the same). */
  readonly lastTransitionTime: string;
  /** The claim's `metadata.generation` the condition describes. */
  readonly observedGeneration?: number;
}

/** Fields of the reconcile state that live only in the controller's bookkeeping. */
type BookkeepingField = 'claim' | 'namespace' | 'secretName' | 'deleting';

/**
 * The claim's `status` subresource: every field of the status file (`ClaimStatus`: error,
 * matchedLabel, binding, activeUser, dbCreatedAt, connectionInfoUpdatedAt, userUpdatedAt,
 * retired, and the migration state of an online move when there is one), plus conditions
 * and the generation they describe.
 */
export type ClaimResourceStatus = Partial<Omit<ClaimStatus, BookkeepingField>> & {
  /** Migration state of an online move, when one is under way (shape: the reconcile's). */
  readonly migration?: unknown;
  readonly observedGeneration?: number;
  readonly conditions?: readonly ClaimCondition[];
};

/** The metadata fields the controller reads and writes. */
export interface ClaimMetadata {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion?: string;
  generation?: number;
  deletionTimestamp?: string | Date;
  finalizers?: string[];
  annotations?: Record<string, string>;
  [field: string]: unknown;
}

/** A DatabaseClaim object as the API returns it. */
export interface ClaimResource {
  /** `persistance.atlas.infoblox.com/v1` (`CLAIM_API_VERSION` of hotload-claim-reconciler). */
  apiVersion: string;
  /** `DatabaseClaim` (`CLAIM_KIND` of hotload-claim-reconciler). */
  kind: string;
  /** The object's metadata (name, namespace, uid, generation, finalizers ...). */
  metadata: ClaimMetadata;
  /** The claim's spec, unvalidated ({@link claimFromResource} validates it). */
  spec: Record<string, unknown>;
  /** The status subresource the controller writes. */
  status?: ClaimResourceStatus;
}

/** The DatabaseClaim custom resource, as its informer watches it. */
export const CLAIM_RESOURCE: ResourceDescription = {
  kind: CLAIM_KIND,
  group: CLAIM_GROUP,
  version: CLAIM_VERSION,
  plural: CLAIM_PLURAL,
};

/**
 * The Secret a claim writes, without validating the whole claim (other claims' statuses
 * are read on every reconcile: a full parse of each would make a pass quadratic in parses).
 */
export function secretNameOf(resource: ClaimResource): string {
  const named = resource.spec?.secretName;
  return typeof named === 'string' ? named : resource.metadata.name;
}

/** The validated claim, or the validation findings as one message (terminal: fix the claim). */
export function claimFromResource(
  resource: ClaimResource,
): { claim: DatabaseClaim; error?: undefined } | { claim?: undefined; error: string } {
  const where = `${CLAIM_KIND} ${resourceKey(resource.metadata)}`;
  const document = {
    apiVersion: CLAIM_API_VERSION,
    kind: CLAIM_KIND,
    metadata: { name: resource.metadata.name, namespace: resource.metadata.namespace },
    spec: resource.spec ?? {},
  };
  // The folder mode's rules, on the object as decoded from the API (no text round trip).
  const { claims, problems } = parseClaimObject(document, where);
  const errors = problems.filter((problem) => problem.severity === 'error');
  const claim = claims[0];
  if (errors.length > 0 || !claim) return { error: errors.map(formatProblem).join('; ') || 'invalid claim' };
  // A path in a claim would let whoever writes claims read the controller's own files.
  if (claim.sourceDataFrom?.kind === 'dsn-file')
    return {
      error: `${where}: spec.sourceDataFrom.database.dsnFile is for the folder mode; the controller reads no file a claim names (use database.secretRef)`,
    };
  return { claim };
}
