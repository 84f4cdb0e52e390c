/**
 * The controller's finalizer on a claim: added before anything is provisioned (so a claim
 * deleted at any moment still gets its deletion policy applied), removed once the policy
 * is applied. Both are read-modify-write with the resourceVersion, retried on 409. Adding
 * starts from the informer's copy when given (no GET: a claim's first reconcile used to read
 * it twice, here and for its status); a stale copy is a 409, retried on a fresh read.
 */

import { type ClaimRef, claimPath, readClaim } from './claim-api.js';
import { CLAIM_FINALIZER, type ClaimResource } from './claim-resource.js';
import { isNotFound, type KubeClients, retryOnConflict } from './kube-clients.js';

/** Whether the claim carries the controller's finalizer. */
export function hasFinalizer(resource: ClaimResource): boolean {
  return (resource.metadata.finalizers ?? []).includes(CLAIM_FINALIZER);
}

/**
 * Adds the finalizer; resolves the updated claim, or undefined when the claim is gone, is
 * another object, or is already being deleted (a finalizer cannot be added then).
 *
 * @param cached - the claim as the informer holds it: the first attempt's base
 */
export async function addFinalizer(
  clients: KubeClients,
  ref: ClaimRef,
  cached?: ClaimResource,
): Promise<ClaimResource | undefined> {
  return changeFinalizers(
    clients,
    ref,
    (resource) =>
      resource.metadata.deletionTimestamp
        ? undefined
        : [...(resource.metadata.finalizers ?? []), CLAIM_FINALIZER],
    cached,
  );
}

/** Removes the finalizer (the API server then deletes the claim). */
export async function removeFinalizer(clients: KubeClients, ref: ClaimRef): Promise<void> {
  await changeFinalizers(clients, ref, (resource) =>
    (resource.metadata.finalizers ?? []).filter((finalizer) => finalizer !== CLAIM_FINALIZER),
  );
}

async function changeFinalizers(
  clients: KubeClients,
  ref: ClaimRef,
  next: (resource: ClaimResource) => string[] | undefined,
  cached?: ClaimResource,
): Promise<ClaimResource | undefined> {
  let base = cached?.metadata.uid === ref.uid ? cached : undefined;
  return retryOnConflict(async () => {
    // The cached copy once; after a 409, what the API holds now.
    const current = base ?? (await readClaim(clients, ref));
    base = undefined;
    const finalizers = current && next(current);
    if (!current || finalizers === undefined) return undefined;
    if (JSON.stringify(finalizers) === JSON.stringify(current.metadata.finalizers ?? [])) return current;
    const body = { ...current, metadata: { ...current.metadata, finalizers } };
    try {
      return (await clients.custom.replaceNamespacedCustomObject({
        ...claimPath(ref),
        body,
      })) as ClaimResource;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  });
}
