/**
 * The claims' recorded reconcile state, as a {@link StatusStore} over one reconcile: reads
 * come from the informer's cache of claim statuses (every claim's, so `Delete` sees what
 * other claims still use), and the write the reconcile makes is kept for the controller,
 * which puts it on the claim's `status` subresource together with the conditions, in one
 * write. A write is thus never lost and never doubled: the reconcile itself is the unit.
 */
import { isDeepStrictEqual } from 'node:util';
import type { ClaimStatus, StatusStore } from 'hotload-claim-reconciler';

/** What the reconcile asked to record for the claim. */
export type RecordedState =
  | { readonly kind: 'written'; readonly status: ClaimStatus }
  | { readonly kind: 'removed' };

/** {@link StatusStore} on a snapshot of the claims' statuses. */
export class KubeStatusStore implements StatusStore {
  readonly #states: Map<string, ClaimStatus>;
  #recorded: RecordedState | undefined;

  /** `states`: every known claim's recorded state. */
  constructor(states: Iterable<ClaimStatus>) {
    this.#states = new Map([...states].map((state) => [secretKey(state.namespace, state.secretName), state]));
  }

  /** What the reconcile recorded, or undefined when it wrote nothing. */
  get recorded(): RecordedState | undefined {
    return this.#recorded;
  }

  async read(namespace: string, secretName: string): Promise<ClaimStatus | undefined> {
    return this.#states.get(secretKey(namespace, secretName));
  }

  async write(status: ClaimStatus): Promise<boolean> {
    const key = secretKey(status.namespace, status.secretName);
    const changed = !isDeepStrictEqual(this.#states.get(key), status);
    this.#states.set(key, status);
    this.#recorded = { kind: 'written', status };
    return changed;
  }

  async remove(status: ClaimStatus): Promise<void> {
    this.#states.delete(secretKey(status.namespace, status.secretName));
    this.#recorded = { kind: 'removed' };
  }

  async list(): Promise<ClaimStatus[]> {
    return [...this.#states.values()];
  }
}

function secretKey(namespace: string, secretName: string): string {
  return `${namespace}/${secretName}`;
}
