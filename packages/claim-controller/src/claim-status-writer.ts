/**
 * Writes the claim's `status` subresource: the reconcile state (the status file's fields),
 * conditions and `observedGeneration`. A `409 Conflict` (someone wrote the claim since we
 * read it) is handled by reading it again and retrying, never by overwriting blindly.
 */
import { isDeepStrictEqual } from 'node:util';
import { type ClaimStatus, storedMigration } from 'hotload-claim-reconciler';
import { type ClaimRef, claimPath, readClaim } from './claim-api.js';
import { type ConditionInput, nextConditions } from './claim-conditions.js';
import type { ClaimResource, ClaimResourceStatus } from './claim-resource.js';
import { isNotFound, type KubeClients, retryOnConflict } from './kube-clients.js';

/** Status fields of the reconcile state: all of it but the controller's bookkeeping. */
export function statusFields(state: ClaimStatus | undefined): ClaimResourceStatus {
  if (!state) return {};
  const {
    claim: _claim,
    namespace: _namespace,
    secretName: _secretName,
    deleting: _deleting,
    ...fields
  } = state;
  return fields;
}

/** The reconcile state recorded on a claim, or undefined before its first reconcile. */
export function stateFromStatus(
  resource: ClaimResource,
  key: string,
  secretName: string,
): ClaimStatus | undefined {
  const status = resource.status;
  if (!status || (status.binding === undefined && status.activeUser === undefined)) return undefined;
  const { observedGeneration: _generation, conditions: _conditions, ...recorded } = status;
  return {
    ...(recorded as Partial<ClaimStatus>),
    claim: key,
    namespace: resource.metadata.namespace,
    secretName,
    error: status.error ?? null,
    matchedLabel: status.matchedLabel ?? null,
    binding: status.binding ?? null,
    activeUser: status.activeUser ?? null,
    dbCreatedAt: status.dbCreatedAt ?? null,
    connectionInfoUpdatedAt: status.connectionInfoUpdatedAt ?? null,
    userUpdatedAt: status.userUpdatedAt ?? null,
    retired: status.retired ?? [],
    deleting: false,
    ...(status.migration === undefined ? {} : { migration: storedMigration(status.migration) }),
  };
}

/**
 * Writes `fields` + conditions on the claim's status. Resolves false when the claim is gone
 * or is now another object (same name, other uid): nothing to write then. With `cached`
 * (the freshest copy of the claim the caller holds: the informer's, or the finalizer
 * write's answer) a status that would not change it is not even read from the API (a
 * resync of unchanged claims costs no request here), and the write starts from it without
 * a GET; a stale copy is a 409, retried on a fresh read.
 */
export async function writeClaimStatus(
  clients: KubeClients,
  ref: ClaimRef,
  fields: ClaimResourceStatus,
  conditions: ConditionInput,
  cached?: ClaimResource,
): Promise<boolean> {
  let base = cached?.metadata.uid === ref.uid ? cached : undefined;
  if (base && isDeepStrictEqual(nextStatus(base, fields, conditions), base.status)) return true;
  return retryOnConflict(async () => {
    // The cached copy once; after a 409, what the API holds now.
    const current = base ?? (await readClaim(clients, ref));
    base = undefined;
    if (!current) return false;
    const status = nextStatus(current, fields, conditions);
    if (isDeepStrictEqual(status, current.status)) return true;
    try {
      await clients.custom.replaceNamespacedCustomObjectStatus({
        ...claimPath(ref),
        body: { ...current, status },
      });
    } catch (error) {
      // Gone since the cached copy was taken.
      if (isNotFound(error)) return false;
      throw error;
    }
    return true;
  });
}

/** The status `claim` gets from `fields` and `conditions`. */
function nextStatus(
  claim: ClaimResource,
  fields: ClaimResourceStatus,
  conditions: ConditionInput,
): ClaimResourceStatus {
  // The generation that was reconciled, not the current one: a newer spec is still to do.
  return {
    ...claim.status,
    ...fields,
    observedGeneration: conditions.generation,
    conditions: nextConditions(claim.status?.conditions, conditions),
  };
}
