/**
 * DatabaseClaim as a Kubernetes resource: where it lives in the API, the shape of its
 * `status` subresource, and its conversion into the reconciler's validated claim (the same
 * parser as the folder mode, so both accept exactly the same documents).
 */
import { CLAIM_API_VERSION, CLAIM_KIND, type DatabaseClaim, parseClaims } from '../claim-schema.js';
import type { Binding } from '../claim-status.js';
import { formatProblem } from '../problems.js';

/** API group of DatabaseClaim (the database controller's, so existing manifests apply). */
export const CLAIM_GROUP = 'persistance.atlas.infoblox.com';
/** API version served. */
export const CLAIM_VERSION = 'v1';
/** Resource (plural) name in API paths. */
export const CLAIM_PLURAL = 'databaseclaims';
/** Finalizer the controller puts on every claim it manages. */
export const CLAIM_FINALIZER = 'persistance.atlas.infoblox.com/hotload-claim-reconciler';

/** A standard Kubernetes condition (`metav1.Condition`). */
export interface ClaimCondition {
  readonly type: 'Ready' | 'Synced';
  readonly status: 'True' | 'False' | 'Unknown';
  readonly reason: string;
  readonly message: string;
  readonly lastTransitionTime: string;
  readonly observedGeneration?: number;
}

/**
 * The claim's `status` subresource: the status file's fields, plus conditions and the
 * generation they describe. `migration` is left for the online-move work to fill in.
 */
export interface ClaimResourceStatus {
  readonly error?: string | null;
  readonly matchedLabel?: string | null;
  readonly binding?: Binding | null;
  readonly activeUser?: string | null;
  readonly dbCreatedAt?: string | null;
  readonly connectionInfoUpdatedAt?: string | null;
  readonly userUpdatedAt?: string | null;
  /** Earlier bindings still waiting for their deletion policy (instance changes). */
  readonly retired?: readonly Binding[];
  /** Migration state of an online move, when one is under way. */
  readonly migration?: Readonly<Record<string, unknown>>;
  readonly observedGeneration?: number;
  readonly conditions?: readonly ClaimCondition[];
}

/** The metadata fields the controller reads and writes. */
export interface ClaimMetadata {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion?: string;
  generation?: number;
  deletionTimestamp?: string | Date;
  finalizers?: string[];
  [field: string]: unknown;
}

/** A DatabaseClaim object as the API returns it. */
export interface ClaimResource {
  apiVersion: string;
  kind: string;
  metadata: ClaimMetadata;
  spec: Record<string, unknown>;
  status?: ClaimResourceStatus;
}

/** `namespace/name` of a resource: the work queue key. */
export function resourceKey(metadata: { namespace?: string; name?: string }): string {
  return `${metadata.namespace ?? ''}/${metadata.name ?? ''}`;
}

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
  // JSON is YAML: the folder mode's parser reads the object unchanged.
  const { claims, problems } = parseClaims(JSON.stringify(document), where);
  const errors = problems.filter((problem) => problem.severity === 'error');
  const claim = claims[0];
  if (errors.length > 0 || !claim) return { error: errors.map(formatProblem).join('; ') || 'invalid claim' };
  return { claim };
}
