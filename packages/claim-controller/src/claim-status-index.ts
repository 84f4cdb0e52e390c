/**
 * Every cached claim's recorded reconcile state, kept up to date from the claim informer's
 * changes. Before, each reconcile built this from every cached claim (O(n) a reconcile, so
 * a pass over n claims was O(n²): the 1,000-claim bench spent seconds of CPU on it). Now a
 * change costs one conversion, and a reconcile's view ({@link KubeStatusStore}) reads it.
 */
import type { ClaimStatus } from 'hotload-claim-reconciler';
import type { ClaimResource } from './claim-resource.js';
import { secretNameOf } from './claim-resource.js';
import { stateFromStatus } from './claim-status-writer.js';
import { type InformerChange, resourceKey } from './resource-informer.js';

/** See the module comment. */
export class ClaimStatusIndex {
  /** Per claim key (`namespace/name`): its recorded state; claims with none are absent. */
  readonly #byClaim = new Map<string, ClaimStatus>();
  /** Per secret key (`namespace/secretName`): the claims whose state names that Secret. */
  readonly #bySecret = new Map<string, Set<string>>();
  /** {@link ClaimStatusIndex.all}, until the next change. */
  #all: readonly ClaimStatus[] | undefined;

  /** Takes in one change of the claim informer's cache. */
  apply({ type, object }: InformerChange<ClaimResource>): void {
    const key = resourceKey(object.metadata);
    this.#forget(key);
    if (type === 'delete') return;
    const state = stateFromStatus(object, key, secretNameOf(object));
    if (!state) return;
    this.#byClaim.set(key, state);
    const secret = secretKey(state.namespace, state.secretName);
    const claims = this.#bySecret.get(secret) ?? new Set<string>();
    claims.add(key);
    this.#bySecret.set(secret, claims);
  }

  /** The state of some claim other than `except` recorded for that Secret, or undefined. */
  bySecret(namespace: string, secretName: string, except: string): ClaimStatus | undefined {
    for (const claim of this.#bySecret.get(secretKey(namespace, secretName)) ?? []) {
      if (claim !== except) return this.#byClaim.get(claim);
    }
    return undefined;
  }

  /** Every recorded state (read-only; the same array until the next change). */
  all(): readonly ClaimStatus[] {
    this.#all ??= [...this.#byClaim.values()];
    return this.#all;
  }

  #forget(key: string): void {
    const previous = this.#byClaim.get(key);
    this.#all = undefined;
    if (!previous) return;
    this.#byClaim.delete(key);
    const secret = secretKey(previous.namespace, previous.secretName);
    const claims = this.#bySecret.get(secret);
    claims?.delete(key);
    if (claims?.size === 0) this.#bySecret.delete(secret);
  }
}

/** A Secret's `namespace/name`. */
export function secretKey(namespace: string, secretName: string): string {
  return `${namespace}/${secretName}`;
}
