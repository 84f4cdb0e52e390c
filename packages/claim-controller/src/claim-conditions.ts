/**
 * The claim's `Ready` and `Synced` conditions, computed purely from the reconcile result
 * (crossplane's meaning: `Synced` says the last reconcile of this generation went through,
 * `Ready` says a Secret with working credentials is published). A condition keeps its
 * `lastTransitionTime` while its status stays the same, as `meta.SetStatusCondition` does.
 */

import type { ClaimReconcile } from 'hotload-claim-reconciler';
import type { ClaimCondition } from './claim-resource.js';

/** Reason of a condition when nothing went wrong. */
export const REASON_RECONCILED = 'Reconciled';

/** What the conditions are computed from. */
export interface ConditionInput {
  readonly result: ClaimReconcile | { readonly invalid: string } | { readonly deleting: ClaimReconcile };
  readonly generation: number;
  /** Whether a Secret with verified credentials is published for the claim. */
  readonly published: boolean;
  readonly now: Date;
}

/** The next `conditions` list, given the previous one. */
export function nextConditions(
  previous: readonly ClaimCondition[] | undefined,
  input: ConditionInput,
): ClaimCondition[] {
  const { result, generation, published } = input;
  let synced: Omit<ClaimCondition, 'lastTransitionTime' | 'type'>;
  if ('invalid' in result) {
    synced = { status: 'False', reason: 'InvalidSpec', message: result.invalid };
  } else if ('deleting' in result) {
    synced = result.deleting.error
      ? { status: 'False', reason: 'DeletionBlocked', message: result.deleting.error.message }
      : { status: 'True', reason: 'Deleting', message: 'applying the deletion policy' };
  } else if (result.error) {
    synced = {
      status: 'False',
      reason: result.error.kind === 'terminal' ? 'ReconcileTerminalError' : 'ReconcileError',
      message: result.error.message,
    };
  } else {
    // A pass that changed nothing keeps the message of the last one that did: a resync of
    // an unchanged claim then writes no status at all.
    const before = previous?.find((condition) => condition.type === 'Synced');
    const quiet =
      result.outcome.actions.length === 0 && before?.status === 'True' && before.reason === REASON_RECONCILED;
    synced = {
      status: 'True',
      reason: REASON_RECONCILED,
      message: quiet ? before.message : result.outcome.actions.join('; ') || result.outcome.result,
    };
  }
  const ready = published
    ? { status: 'True' as const, reason: 'SecretPublished', message: 'the Secret holds verified credentials' }
    : { status: 'False' as const, reason: 'SecretNotPublished', message: synced.message };
  return [
    withTransition(previous, { type: 'Ready', observedGeneration: generation, ...ready }, input.now),
    withTransition(previous, { type: 'Synced', observedGeneration: generation, ...synced }, input.now),
  ];
}

function withTransition(
  previous: readonly ClaimCondition[] | undefined,
  next: Omit<ClaimCondition, 'lastTransitionTime'>,
  now: Date,
): ClaimCondition {
  const before = previous?.find((condition) => condition.type === next.type);
  const lastTransitionTime =
    before && before.status === next.status ? before.lastTransitionTime : now.toISOString();
  return { ...next, lastTransitionTime };
}
