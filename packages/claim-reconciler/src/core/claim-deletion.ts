/**
 * A claim that is gone: remove its secret, apply its deletion policy to every binding it
 * had, then remove its status. A clean-up that fails keeps the status (`deleting`) so the
 * next pass retries it.
 */

import { inProgress } from '../migration/migration-state.js';
import { cleanUpBindings } from './binding-cleanup.js';
import { masterForBinding } from './binding-master.js';
import type { ClaimContext } from './claim-context.js';
import { dropMigrationOf } from './claim-migration.js';
import type { ClaimReconcile } from './claim-outcome.js';
import type { SecretSink } from './claim-ports.js';
import { claimLockName } from './claim-reconcile.js';
import type { ClaimStatus } from './claim-status.js';
import { errorMessage } from './error-message.js';
import { retryable } from './reconcile-result.js';
import { performStep } from './steps.js';

/**
 * Deletes what the claim of `status` left behind, holding the claim's advisory lock and the
 * secret's lock (as `reconcileClaim` does). Never throws.
 */
export async function deleteClaim(context: ClaimContext, status: ClaimStatus): Promise<ClaimReconcile> {
  const binding = status.binding ?? status.retired[0];
  const known = binding && (binding.existingSource || context.config.fragmentKeys.has(binding.label));
  if (!binding || !known) return deleteHoldingSecretLock(context, status);
  try {
    const master = await masterForBinding(context, binding);
    return await master.withAdvisoryLock(claimLockName(binding.userName), () =>
      deleteHoldingSecretLock(context, status),
    );
  } catch (error) {
    const message = errorMessage(error);
    const location = context.ports.secretFor(status.namespace, status.secretName).location;
    return {
      outcome: {
        claim: status.claim,
        result: 'error',
        actions: [],
        error: message,
        secretLocation: location,
      },
      error: retryable(message),
    };
  }
}

/**
 * Holding the secret's lock, re-reads the status first: another reconciler may have
 * finished the deletion meanwhile, or another claim (same secret name, a renamed claim)
 * may own the secret now; either way there is nothing of this claim left to delete here.
 */
async function deleteHoldingSecretLock(context: ClaimContext, status: ClaimStatus): Promise<ClaimReconcile> {
  const sink = context.ports.secretFor(status.namespace, status.secretName);
  return sink.lock(async () => {
    const current = await context.ports.statuses.read(status.namespace, status.secretName);
    if (!current || current.claim !== status.claim) {
      return {
        outcome: { claim: status.claim, result: 'deleted', actions: [], secretLocation: sink.location },
      };
    }
    return deleteLocked(context, current, sink);
  });
}

async function deleteLocked(
  context: ClaimContext,
  status: ClaimStatus,
  sink: SecretSink,
): Promise<ClaimReconcile> {
  const { onStep, ports } = context;
  const actions: string[] = [];
  const base = { claim: status.claim, actions, secretLocation: sink.location };
  try {
    if (await performStep(onStep, { claim: status.claim, action: 'remove-secret' })) await sink.remove();
    actions.push('removed secret');
    const migrating = await dropMigrationOf(context, status);
    if (inProgress(status.migration)) actions.push('dropped the migration in progress');
    const bindings = [...(status.binding ? [status.binding] : []), ...status.retired, ...migrating];
    const remaining = await cleanUpBindings(context, status.claim, bindings, actions);
    if (remaining.bindings.length === 0) {
      await ports.statuses.remove(status, onStep);
      return { outcome: { ...base, result: 'deleted' } };
    }
    const error = remaining.errors.join('; ');
    await ports.statuses.write(
      {
        ...status,
        binding: null,
        activeUser: null,
        retired: remaining.bindings,
        deleting: true,
        error,
        migration: null,
      },
      onStep,
    );
    return { outcome: { ...base, result: 'deletion-pending', error }, error: retryable(error) };
  } catch (error) {
    const message = errorMessage(error);
    return { outcome: { ...base, result: 'error', error: message }, error: retryable(message) };
  }
}
