/**
 * The claims' recorded reconcile state, as a {@link StatusStore} over one reconcile: the
 * claim's own state as its caller read it, every other claim's from the
 * {@link ClaimStatusIndex} (so `Delete` sees what other claims still use), and the write
 * the reconcile makes kept for the controller, which puts it on the claim's `status`
 * subresource together with the conditions, in one write. A write is thus never lost and
 * never doubled: the reconcile itself is the unit.
 */
import { isDeepStrictEqual } from 'node:util';
import type { ClaimStatus, StatusStore } from 'hotload-claim-reconciler';
import { type ClaimStatusIndex, secretKey } from './claim-status-index.js';

/** What the reconcile asked to record for the claim. */
export type RecordedState =
  | { readonly kind: 'written'; readonly status: ClaimStatus }
  | { readonly kind: 'removed' };

/** {@link StatusStore} of one reconcile: its own state over the other claims' (see the module comment). */
export class KubeStatusStore implements StatusStore {
  readonly #others: ClaimStatusIndex;
  readonly #self: string;
  /** Per secret key: this reconcile's own state (as read, then as written), null once removed. */
  readonly #own = new Map<string, OwnState>();
  #recorded: RecordedState | undefined;

  /**
   * @param others - every claim's recorded state (the claim `self`'s own there is ignored)
   * @param self - the claim's key (`namespace/name`)
   * @param own - the claim's own state as the caller read it, undefined when none is recorded
   */
  constructor(others: ClaimStatusIndex, self: string, own: ClaimStatus | undefined) {
    this.#others = others;
    this.#self = self;
    if (own) this.#keep(own, own);
  }

  /** What the reconcile recorded, or undefined when it wrote nothing. */
  get recorded(): RecordedState | undefined {
    return this.#recorded;
  }

  async read(namespace: string, secretName: string): Promise<ClaimStatus | undefined> {
    const key = secretKey(namespace, secretName);
    const own = this.#own.get(key);
    if (own) return own.state ?? undefined;
    return this.#others.bySecret(namespace, secretName, this.#self);
  }

  async write(status: ClaimStatus): Promise<boolean> {
    const changed = !isDeepStrictEqual(await this.read(status.namespace, status.secretName), status);
    this.#keep(status, status);
    this.#recorded = { kind: 'written', status };
    return changed;
  }

  async remove(status: ClaimStatus): Promise<void> {
    this.#keep(status, null);
    this.#recorded = { kind: 'removed' };
  }

  async list(): Promise<ClaimStatus[]> {
    const own = [...this.#own.values()];
    // Compared field by field: this runs over every claim, so no key string per claim.
    const isOwnSecret = (state: ClaimStatus) =>
      own.some((entry) => entry.namespace === state.namespace && entry.secretName === state.secretName);
    const others = this.#others.all().filter((state) => state.claim !== this.#self && !isOwnSecret(state));
    return [...others, ...own.flatMap((entry) => (entry.state ? [entry.state] : []))];
  }

  #keep(place: { namespace: string; secretName: string }, state: ClaimStatus | null): void {
    const { namespace, secretName } = place;
    this.#own.set(secretKey(namespace, secretName), { namespace, secretName, state });
  }
}

/** The reconcile's own state for one Secret: as read, then as written; null once removed. */
interface OwnState {
  readonly namespace: string;
  readonly secretName: string;
  readonly state: ClaimStatus | null;
}
