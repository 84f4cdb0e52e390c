/** Which watch updates need a reconcile: pure, so tested on plain objects. */

import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { needsReconcile, reconcileView } from '../src/reconcile-predicate.js';

const FINALIZER = 'example.com/finalizer';

function claim(metadata: KubernetesObject['metadata'] = {}, status: unknown = undefined): KubernetesObject {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Thing',
    metadata: { name: 'a', namespace: 'ns', uid: 'u1', generation: 1, resourceVersion: '10', ...metadata },
    ...(status === undefined ? {} : { status }),
  } as KubernetesObject;
}

const after = (previous: KubernetesObject, next: KubernetesObject) =>
  needsReconcile(reconcileView(previous), reconcileView(next));

describe('needsReconcile', () => {
  it('a status write (new resourceVersion, same generation) needs none', () => {
    expect(after(claim(), claim({ resourceVersion: '11' }, { observedGeneration: 1 }))).toBe(false);
  });

  it('a finalizer added needs none; one taken away does', () => {
    const without = claim();
    const withFinalizer = claim({ finalizers: [FINALIZER], resourceVersion: '11' });
    expect(after(without, withFinalizer)).toBe(false);
    expect(after(withFinalizer, claim({ finalizers: [], resourceVersion: '12' }))).toBe(true);
  });

  it('a new generation, a deletion mark, labels, annotations or a new uid do', () => {
    const base = claim({ finalizers: [FINALIZER] });
    expect(after(base, claim({ finalizers: [FINALIZER], generation: 2 }))).toBe(true);
    expect(after(base, claim({ finalizers: [FINALIZER], deletionTimestamp: new Date(0) }))).toBe(true);
    expect(after(base, claim({ finalizers: [FINALIZER], labels: { team: 'x' } }))).toBe(true);
    expect(after(base, claim({ finalizers: [FINALIZER], annotations: { allow: 'true' } }))).toBe(true);
    expect(after(base, claim({ finalizers: [FINALIZER], uid: 'u2' }))).toBe(true);
  });

  it('an object not seen before does', () => {
    expect(needsReconcile(undefined, reconcileView(claim()))).toBe(true);
  });
});
