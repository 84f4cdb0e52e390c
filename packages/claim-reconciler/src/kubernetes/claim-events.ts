/**
 * Kubernetes Events about a claim (created / rotated / moved / deleted / failed), so
 * `kubectl describe databaseclaim` tells what happened. Messages are the reconciler's
 * action texts, which never hold a password. Recording is best effort: an Event that
 * cannot be written never fails a reconcile.
 */
import { randomBytes } from 'node:crypto';
import type { ClaimResult } from '../reconciler.js';
import type { ClaimRef } from './claim-api.js';
import { CLAIM_GROUP, CLAIM_VERSION } from './claim-resource.js';
import type { KubeClients } from './kube-clients.js';

/** `reportingComponent` / `source.component` of every Event. */
export const EVENT_COMPONENT = 'hotload-claim-reconciler';

/** One Event to record. */
export interface ClaimEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

/** Event reasons of outcomes worth an Event; others (unchanged, updated) are quiet. */
const OUTCOME_REASONS: Partial<Record<ClaimResult, string>> = {
  created: 'Created',
  rotated: 'Rotated',
  repaired: 'Repaired',
  moved: 'Moved',
  deleted: 'Deleted',
};

/** The Event for a reconcile outcome, if any. */
export function eventFor(
  outcome: ClaimResult,
  actions: readonly string[],
  error: string | undefined,
): ClaimEvent | undefined {
  if (error !== undefined) return { type: 'Warning', reason: 'ReconcileFailed', message: error };
  const reason = OUTCOME_REASONS[outcome];
  return reason ? { type: 'Normal', reason, message: actions.join('; ') || outcome } : undefined;
}

/** Writes Events about claims; failures go to `onError` (a log line), never up. */
export class ClaimEventRecorder {
  constructor(
    private readonly clients: KubeClients,
    private readonly onError: (message: string) => void = () => {},
  ) {}

  async record(claim: ClaimRef, event: ClaimEvent): Promise<void> {
    const now = new Date();
    try {
      await this.clients.core.createNamespacedEvent({
        namespace: claim.namespace,
        body: {
          metadata: { name: `${claim.name}.${randomBytes(8).toString('hex')}`, namespace: claim.namespace },
          involvedObject: {
            apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
            kind: 'DatabaseClaim',
            name: claim.name,
            namespace: claim.namespace,
            uid: claim.uid,
          },
          type: event.type,
          reason: event.reason,
          message: event.message.slice(0, 1024),
          source: { component: EVENT_COMPONENT },
          reportingComponent: EVENT_COMPONENT,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (error) {
      this.onError(
        `event ${event.reason} for ${claim.namespace}/${claim.name} not recorded: ${(error as Error).name}`,
      );
    }
  }
}
