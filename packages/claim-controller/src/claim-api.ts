/**
 * Reading one claim fresh from the API (not the informer cache) before a read-modify-write:
 * the finalizer and status updates both start here, and both stop when the claim is gone
 * or has been replaced by another object of the same name (another uid).
 */
import { CLAIM_GROUP, CLAIM_PLURAL, CLAIM_VERSION, type ClaimResource } from './claim-resource.js';
import { isNotFound, type KubeClients } from './kube-clients.js';

/** The claim a write is for: name and the uid it had when the reconcile started. */
export interface ClaimRef {
  /** The claim's namespace. */
  readonly namespace: string;
  /** The claim's name. */
  readonly name: string;
  /**
   * The claim's uid when the reconcile started: a claim since replaced by another object of
   * the same name is not written to.
   */
  readonly uid: string;
}

/** The custom-object request parameters of a claim. */
export function claimPath(ref: ClaimRef) {
  return {
    group: CLAIM_GROUP,
    version: CLAIM_VERSION,
    plural: CLAIM_PLURAL,
    namespace: ref.namespace,
    name: ref.name,
  };
}

/** The claim as stored now, or undefined when it is gone or is another object (other uid). */
export async function readClaim(clients: KubeClients, ref: ClaimRef): Promise<ClaimResource | undefined> {
  let current: ClaimResource;
  try {
    current = (await clients.custom.getNamespacedCustomObject(claimPath(ref))) as ClaimResource;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  return current.metadata.uid === ref.uid ? current : undefined;
}
