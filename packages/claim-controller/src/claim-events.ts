/**
 * Kubernetes Events about a claim (created / rotated / moved / deleted / failed), so
 * `kubectl describe databaseclaim` tells what happened. Messages are the reconciler's
 * action texts, which never hold a password. Recording is best effort: an Event that
 * cannot be written never fails a reconcile. Repeats are folded and rate-limited as
 * client-go's recorder does.
 */
import { randomBytes } from 'node:crypto';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { ClaimResult } from 'hotload-claim-reconciler';
import type { ClaimRef } from './claim-api.js';
import { CLAIM_GROUP, CLAIM_VERSION } from './claim-resource.js';
import { describeApiError, isNotFound, type KubeClients } from './kube-clients.js';

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
  migrating: 'Migrating',
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

/** Options of {@link ClaimEventRecorder}: client-go's recorder defaults. */
export interface EventRecorderOptions {
  /** Events one claim may record at once before the refill rate applies; default 25. */
  readonly burst?: number;
  /** One more Event per claim each this many milliseconds; default 300,000 (5 minutes). */
  readonly refillMillis?: number;
  /** Clock; default `Date.now`. */
  readonly now?: () => number;
}

/**
 * Folded Events (and claims' token buckets) kept, the most recent: a repeat updates its
 * Event instead of adding one.
 */
const FOLDED_EVENTS_KEPT = 4096;

interface RecordedEvent {
  readonly name: string;
  count: number;
}

interface TokenBucket {
  tokens: number;
  at: number;
}

/**
 * Writes Events about claims the way client-go's recorder does: a repeat of the same type,
 * reason and message on the same claim updates that Event (`count`, `lastTimestamp`)
 * instead of adding another, and each claim gets a token bucket (a burst, then one Event
 * every few minutes) so a claim failing in a loop cannot flood the namespace. Failures go
 * to `onError` (a log line), never up.
 */
export class ClaimEventRecorder {
  readonly #recorded = new Map<string, RecordedEvent>();
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #burst: number;
  readonly #refillMillis: number;
  readonly #now: () => number;

  constructor(
    private readonly clients: KubeClients,
    private readonly onError: (message: string) => void = () => {},
    options: EventRecorderOptions = {},
  ) {
    this.#burst = options.burst ?? 25;
    this.#refillMillis = options.refillMillis ?? 300_000;
    this.#now = options.now ?? Date.now;
  }

  async record(claim: ClaimRef, event: ClaimEvent): Promise<void> {
    const key = [claim.uid, event.type, event.reason, event.message].join('\u0000');
    const seen = this.#recorded.get(key);
    if (seen && (await this.#fold(claim, seen))) {
      // Most recent last: the map's order is the eviction order.
      this.#recorded.delete(key);
      this.#recorded.set(key, seen);
      return;
    }
    if (!this.#take(claim.uid)) return;
    const name = await this.#create(claim, event);
    if (name === undefined) return;
    this.#recorded.set(key, { name, count: 1 });
    if (this.#recorded.size > FOLDED_EVENTS_KEPT) this.#recorded.delete(this.#recorded.keys().next().value!);
  }

  /** Counts a repeat on the Event already written; false when that Event is gone (expired). */
  async #fold(claim: ClaimRef, seen: RecordedEvent): Promise<boolean> {
    try {
      await this.clients.core.patchNamespacedEvent(
        {
          name: seen.name,
          namespace: claim.namespace,
          body: { count: seen.count + 1, lastTimestamp: new Date(this.#now()) },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      seen.count++;
      return true;
    } catch (error) {
      if (!isNotFound(error))
        this.onError(`event for ${claim.namespace}/${claim.name} not updated: ${describeApiError(error)}`);
      return false;
    }
  }

  /** A token of the claim's bucket, if one is left. */
  #take(uid: string): boolean {
    const now = this.#now();
    const bucket = this.#buckets.get(uid) ?? { tokens: this.#burst, at: now };
    const refilled = Math.floor((now - bucket.at) / this.#refillMillis);
    if (refilled > 0) {
      bucket.tokens = Math.min(this.#burst, bucket.tokens + refilled);
      bucket.at += refilled * this.#refillMillis;
    }
    this.#buckets.set(uid, bucket);
    // Claims come and go: keep the buckets of the most recent ones only (a forgotten claim
    // starts again with a full bucket, as after a restart).
    if (this.#buckets.size > FOLDED_EVENTS_KEPT) this.#buckets.delete(this.#buckets.keys().next().value!);
    if (bucket.tokens === 0) return false;
    bucket.tokens--;
    return true;
  }

  async #create(claim: ClaimRef, event: ClaimEvent): Promise<string | undefined> {
    const now = new Date(this.#now());
    const name = `${claim.name}.${randomBytes(8).toString('hex')}`;
    try {
      await this.clients.core.createNamespacedEvent({
        namespace: claim.namespace,
        body: {
          metadata: { name, namespace: claim.namespace },
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
      return name;
    } catch (error) {
      this.onError(
        `event ${event.reason} for ${claim.namespace}/${claim.name} not recorded: ${(error as Error).name}`,
      );
      return undefined;
    }
  }
}
