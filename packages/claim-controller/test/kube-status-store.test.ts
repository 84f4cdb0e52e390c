/**
 * The claims' status view: kept from informer changes (ClaimStatusIndex) and read by one
 * reconcile through KubeStatusStore (its own state over the others'). Pure, so tested on
 * plain claim objects.
 */

import type { Binding } from 'hotload-claim-reconciler';
import { describe, expect, it } from 'vitest';
import type { ClaimResource, ClaimResourceStatus } from '../src/claim-resource.js';
import { ClaimStatusIndex } from '../src/claim-status-index.js';
import { stateFromStatus } from '../src/claim-status-writer.js';
import { KubeStatusStore } from '../src/kube-status-store.js';

function claim(name: string, status?: ClaimResourceStatus, secretName = name): ClaimResource {
  return {
    apiVersion: 'persistance.atlas.infoblox.com/v1',
    kind: 'DatabaseClaim',
    metadata: { name, namespace: 'ns', uid: `uid-${name}` },
    spec: { secretName },
    ...(status ? { status } : {}),
  };
}

const binding = (databaseName: string): Binding => ({
  label: 'atlas',
  host: 'localhost',
  port: 5432,
  databaseName,
  userName: `${databaseName}_user`,
  deletionPolicy: 'Orphan',
});
const recorded = (database: string): ClaimResourceStatus =>
  ({ binding: binding(database), activeUser: `${database}_user_a`, observedGeneration: 1 }) as never;
const databases = (states: readonly { binding: unknown }[]) =>
  states.map((state) => (state.binding as Binding | null)?.databaseName).sort();

describe('ClaimStatusIndex', () => {
  it('follows adds, updates and deletes; a claim without recorded state is absent', () => {
    const index = new ClaimStatusIndex();
    index.apply({ type: 'add', object: claim('a', recorded('a')) });
    index.apply({ type: 'add', object: claim('b') });
    expect(databases(index.all())).toEqual(['a']);
    index.apply({ type: 'update', object: claim('b', recorded('b')) });
    index.apply({ type: 'update', object: claim('a', recorded('a2')) });
    expect(databases(index.all())).toEqual(['a2', 'b']);
    index.apply({ type: 'delete', object: claim('a', recorded('a2')) });
    expect(databases(index.all())).toEqual(['b']);
    expect(index.bySecret('ns', 'a', 'ns/x')).toBeUndefined();
    expect(index.bySecret('ns', 'b', 'ns/x')?.claim).toBe('ns/b');
    expect(index.bySecret('ns', 'b', 'ns/b')).toBeUndefined();
  });
});

describe('KubeStatusStore', () => {
  it("reads the claim's own state as given, the others' from the index, and keeps its write to itself", async () => {
    const index = new ClaimStatusIndex();
    index.apply({ type: 'add', object: claim('a', recorded('cached-a')) });
    index.apply({ type: 'add', object: claim('b', recorded('b')) });
    // The claim's own state as its caller read it, newer than the cache's.
    const own = stateFromStatus(claim('a', recorded('fresh-a')), 'ns/a', 'a');
    const store = new KubeStatusStore(index, 'ns/a', own);
    expect((await store.read('ns', 'a'))?.binding).toEqual(binding('fresh-a'));
    expect(databases(await store.list())).toEqual(['b', 'fresh-a']);

    const written = { ...own!, binding: binding('new-a') };
    expect(await store.write(written)).toBe(true);
    expect(await store.write(written)).toBe(false);
    expect(store.recorded).toEqual({ kind: 'written', status: written });
    expect(databases(await store.list())).toEqual(['b', 'new-a']);
    // The index is not changed by a reconcile's write: the status subresource is, later.
    expect(databases(index.all())).toEqual(['b', 'cached-a']);

    await store.remove(written);
    expect(await store.read('ns', 'a')).toBeUndefined();
    expect(databases(await store.list())).toEqual(['b']);
    expect(store.recorded).toEqual({ kind: 'removed' });
  });

  it('a claim with no state of its own yet sees none, even though the cache holds an older one', async () => {
    const index = new ClaimStatusIndex();
    index.apply({ type: 'add', object: claim('a', recorded('old-a')) });
    const store = new KubeStatusStore(index, 'ns/a', undefined);
    expect(await store.read('ns', 'a')).toBeUndefined();
    expect(await store.list()).toEqual([]);
  });
});
