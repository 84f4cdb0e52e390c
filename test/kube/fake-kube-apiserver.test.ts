/**
 * The FAKE Kubernetes API server keeps the API conventions the controller relies on. These
 * tests speak plain HTTP to it, as any client would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeKubeApiServer, type KubeObject, nextEvent } from '../support/index.js';

const CLAIMS = {
  group: 'example.com',
  version: 'v1',
  plural: 'widgets',
  kind: 'Widget',
  statusSubresource: true,
};
let fake: FakeKubeApiServer;

beforeAll(async () => {
  fake = await FakeKubeApiServer.start([CLAIMS]);
});
afterAll(async () => {
  await fake.close();
});

const widgets = (ns = 'default') => `${fake.url}/apis/example.com/v1/namespaces/${ns}/widgets`;

/** A JSON API response, loosely typed: the tests check its shape. */
// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field
type Json = any;

async function call(method: string, url: string, body?: unknown): Promise<{ code: number; json: Json }> {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { code: response.status, json: await response.json() };
}

function widget(name: string, spec: object = { size: 1 }): KubeObject {
  return { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name }, spec };
}

/** Reads watch events line by line until `count` have arrived (or the stream ends). */
async function watchEvents(url: string, count: number): Promise<Array<{ type: string; object: Json }>> {
  const controller = new AbortController();
  const response = await fetch(url, { signal: controller.signal });
  const reader = response.body!.getReader();
  const events: Array<{ type: string; object: Json }> = [];
  let buffered = '';
  while (events.length < count) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += Buffer.from(value).toString('utf8');
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      events.push(JSON.parse(buffered.slice(0, newline)));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
  }
  controller.abort();
  return events;
}

describe('the fake Kubernetes API server', () => {
  it('creates with uid, generation 1 and a resourceVersion; a second create is 409 AlreadyExists', async () => {
    const created = await call('POST', widgets(), widget('a'));
    expect(created.code).toBe(201);
    expect(created.json.metadata).toMatchObject({ name: 'a', namespace: 'default', generation: 1 });
    expect(created.json.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    const again = await call('POST', widgets(), widget('a'));
    expect(again.code).toBe(409);
    expect(again.json).toMatchObject({ kind: 'Status', reason: 'AlreadyExists', code: 409 });
    expect((await call('GET', `${widgets()}/missing`)).json).toMatchObject({ reason: 'NotFound', code: 404 });
  });

  it('lists with the current resourceVersion and rejects a PUT with a stale one (409 Conflict)', async () => {
    const list = await call('GET', `${fake.url}/apis/example.com/v1/widgets`);
    expect(list.json.kind).toBe('WidgetList');
    expect(list.json.metadata.resourceVersion).toBe(fake.resourceVersion);
    const current = (await call('GET', `${widgets()}/a`)).json;
    const updated = await call('PUT', `${widgets()}/a`, { ...current, spec: { size: 2 } });
    expect(updated.code).toBe(200);
    expect(updated.json.metadata.generation).toBe(2);
    const stale = await call('PUT', `${widgets()}/a`, { ...current, spec: { size: 3 } });
    expect(stale.code).toBe(409);
    expect(stale.json.reason).toBe('Conflict');
  });

  it('keeps status and spec apart: the main resource ignores status, /status ignores the rest', async () => {
    const current = (await call('GET', `${widgets()}/a`)).json;
    const viaMain = await call('PUT', `${widgets()}/a`, { ...current, status: { phase: 'set-on-main' } });
    expect(viaMain.json.status).toBeUndefined();
    const viaStatus = await call('PUT', `${widgets()}/a/status`, {
      ...viaMain.json,
      spec: { size: 99 },
      status: { phase: 'ok' },
    });
    expect(viaStatus.json.status).toEqual({ phase: 'ok' });
    expect(viaStatus.json.spec).toEqual(current.spec);
    expect(viaStatus.json.metadata.generation).toBe(current.metadata.generation);
  });

  it('watch: replays after a resourceVersion, sends bookmarks on request, 410 Gone once compacted', async () => {
    const from = fake.resourceVersion;
    await call('POST', widgets(), widget('b'));
    const replayed = await watchEvents(`${widgets()}?watch=true&resourceVersion=${from}`, 1);
    expect(replayed[0]).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'b' } } });

    const opened = nextEvent(fake, 'watch-open');
    const bookmarked = watchEvents(
      `${widgets()}?watch=true&allowWatchBookmarks=true&resourceVersion=${fake.resourceVersion}`,
      1,
    );
    await opened;
    fake.sendBookmarks();
    expect((await bookmarked)[0]).toMatchObject({
      type: 'BOOKMARK',
      object: { metadata: { resourceVersion: fake.resourceVersion } },
    });

    fake.compactHistory();
    const gone = await watchEvents(`${widgets()}?watch=true&resourceVersion=${from}`, 1);
    expect(gone[0]).toMatchObject({
      type: 'ERROR',
      object: { kind: 'Status', code: 410, reason: 'Expired' },
    });
  });

  it('finalizers: DELETE sets deletionTimestamp; removing the last finalizer deletes; none may be added meanwhile', async () => {
    const created = (
      await call('POST', widgets(), { ...widget('f'), metadata: { name: 'f', finalizers: ['x/y'] } })
    ).json;
    const deleting = await call('DELETE', `${widgets()}/f`);
    expect(deleting.json.metadata.deletionTimestamp).toBeDefined();
    expect(fake.get('widgets', 'default', 'f')).toBeDefined();
    const adding = await call('PUT', `${widgets()}/f`, {
      ...deleting.json,
      metadata: { ...deleting.json.metadata, finalizers: ['x/y', 'x/z'] },
    });
    expect(adding.code).toBe(422);
    const removed = await call('PUT', `${widgets()}/f`, {
      ...deleting.json,
      metadata: { ...deleting.json.metadata, finalizers: [] },
    });
    expect(removed.code).toBe(200);
    expect(fake.get('widgets', 'default', 'f')).toBeUndefined();
    expect(created.metadata.uid).toBeDefined();
  });

  it('garbage-collects an object whose only owner is deleted', async () => {
    const owner = (await call('POST', widgets(), widget('owner'))).json;
    await call('POST', `${fake.url}/api/v1/namespaces/default/secrets`, {
      metadata: {
        name: 'owned',
        ownerReferences: [
          { apiVersion: 'example.com/v1', kind: 'Widget', name: 'owner', uid: owner.metadata.uid },
        ],
      },
      data: {},
    });
    await call('POST', `${fake.url}/api/v1/namespaces/default/secrets`, {
      metadata: { name: 'free' },
      data: {},
    });
    await call('DELETE', `${widgets()}/owner`);
    expect(fake.get('secrets', 'default', 'owned')).toBeUndefined();
    expect(fake.get('secrets', 'default', 'free')).toBeDefined();
  });

  it('serves Leases with the same optimistic concurrency', async () => {
    const leases = `${fake.url}/apis/coordination.k8s.io/v1/namespaces/default/leases`;
    const lease = (await call('POST', leases, { metadata: { name: 'l' }, spec: { holderIdentity: 'a' } }))
      .json;
    expect((await call('PUT', `${leases}/l`, { ...lease, spec: { holderIdentity: 'b' } })).code).toBe(200);
    expect((await call('PUT', `${leases}/l`, { ...lease, spec: { holderIdentity: 'c' } })).code).toBe(409);
  });
});
