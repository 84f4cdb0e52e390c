/**
 * Which watch updates need a reconcile: controller-runtime's GenerationChangedPredicate,
 * with the metadata a reconcile reads added. A controller's own status write changes only
 * `status` and the resourceVersion, so it does not requeue the claim it came from (before,
 * every claim was reconciled a second time by the echo of its own write).
 */
import { isDeepStrictEqual } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';

/** What of an object a reconcile depends on (kept per key, compared with the next update). */
export interface ReconcileView {
  /** `metadata.uid`: another value is another object of the same name. */
  readonly uid: string | undefined;
  /** `metadata.generation`: the API server bumps it on every spec change. */
  readonly generation: number | undefined;
  /** `metadata.deletionTimestamp` as text, undefined until the object is being deleted. */
  readonly deletionTimestamp: string | undefined;
  /** `metadata.labels` (empty when none). */
  readonly labels: Readonly<Record<string, string>>;
  /** `metadata.annotations` (empty when none). */
  readonly annotations: Readonly<Record<string, string>>;
  /** `metadata.finalizers` (empty when none). */
  readonly finalizers: readonly string[];
}

/** The {@link ReconcileView} of `object`. */
export function reconcileView(object: KubernetesObject): ReconcileView {
  const metadata = object.metadata ?? {};
  const deletion = metadata.deletionTimestamp as Date | string | undefined;
  return {
    uid: metadata.uid,
    generation: metadata.generation,
    deletionTimestamp: deletion === undefined ? undefined : String(deletion),
    labels: metadata.labels ?? {},
    annotations: metadata.annotations ?? {},
    finalizers: metadata.finalizers ?? [],
  };
}

/**
 * Whether going from `previous` to `next` needs a reconcile: a new generation (the spec), a
 * new object of the same name, a deletion mark, labels or annotations (the allow-delete
 * annotation is recorded by the reconcile), or a finalizer taken away (put back by the
 * controller that owns it). A finalizer added does not: whoever added it is reconciling.
 */
export function needsReconcile(previous: ReconcileView | undefined, next: ReconcileView): boolean {
  if (previous === undefined) return true;
  return (
    previous.uid !== next.uid ||
    previous.generation !== next.generation ||
    previous.deletionTimestamp !== next.deletionTimestamp ||
    !isDeepStrictEqual(previous.labels, next.labels) ||
    !isDeepStrictEqual(previous.annotations, next.annotations) ||
    previous.finalizers.some((finalizer) => !next.finalizers.includes(finalizer))
  );
}
