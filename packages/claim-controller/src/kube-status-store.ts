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
  readonly #own = new Map<string, ClaimStatus | null>();
  #recorded: RecordedState | undefined;

  /**
   * @param others - every claim's recorded state (the claim `self`'s own there is ignored)
   * @param self - the claim's key (`namespace/name`)
   * @param own - the claim's own state as the caller read it, undefined when none is recorded
   */
  constructor(others: ClaimStatusIndex, self: string, own: ClaimStatus | undefined) {
    this.#others = others;
    this.#self = self;
    if (own) this.#own.set(secretKey(own.namespace, own.secretName), own);
  }

  /** What the reconcile recorded, or undefined when it wrote nothing. */
  get recorded(): RecordedState | undefined {
    return this.#recorded;
  }

  async read(namespace: string, secretName: string): Promise<ClaimStatus | undefined> {
    const key = secretKey(namespace, secretName);
    if (this.#own.has(key)) return this.#own.get(key) ?? undefined;
    return this.#others.bySecret(namespace, secretName, this.#self);
  }

  async write(status: ClaimStatus): Promise<boolean> {
    const changed = !isDeepStrictEqual(await this.read(status.namespace, status.secretName), status);
    this.#own.set(secretKey(status.namespace, status.secretName), status);
    this.#recorded = { kind: 'written', status };
    return changed;
  }

  async remove(status: ClaimStatus): Promise<void> {
    this.#own.set(secretKey(status.namespace, status.secretName), null);
    this.#recorded = { kind: 'removed' };
  }

  async list(): Promise<ClaimStatus[]> {
    const others = this.#others
      .all()
      .filter(
        (state) => state.claim !== this.#self && !this.#own.has(secretKey(state.namespace, state.secretName)),
      );
    const own = [...this.#own.values()].filter((state): state is ClaimStatus => state !== null);
    return [...others, ...own];
  }
}
