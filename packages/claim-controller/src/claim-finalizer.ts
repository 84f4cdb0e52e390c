/**
 * The controller's finalizer on a claim: added before anything is provisioned (so a claim
 * deleted at any moment still gets its deletion policy applied), removed once the policy
 * is applied. Both are read-modify-write with the resourceVersion, retried on 409.
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
 */
export async function addFinalizer(clients: KubeClients, ref: ClaimRef): Promise<ClaimResource | undefined> {
  return changeFinalizers(clients, ref, (resource) =>
    resource.metadata.deletionTimestamp
      ? undefined
      : [...(resource.metadata.finalizers ?? []), CLAIM_FINALIZER],
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
): Promise<ClaimResource | undefined> {
  return retryOnConflict(async () => {
    const current = await readClaim(clients, ref);
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
