/**
 * The controller when the API misbehaves or races it, on the REAL control plane (real
 * PostgreSQL): connections reset by a TCP fault proxy; `5xx` answers and watch streams
 * ended by an HTTPS fault proxy of ours between the controller and kube-apiserver; `410
 * Gone` after a real etcd compaction (watch cache off, so watches are etcd's own); a status
 * write that gets a real `409 Conflict` (another writer goes first, through the test's hold
 * on the controller's client); a claim deleted while its reconcile runs.
 */

import type { StepHook } from 'hotload-claim-reconciler';
import {
  CONTROLLER_SERVICE_ACCOUNT,
  describeOnControlPlane,
  FaultProxy,
  KubeFaultProxy,
  nextEvent,
  type ProxiedRequest,
  useKubeTestBed,
} from 'hotload-test-support';
import { useReconcilerCluster } from 'hotload-test-support/claims';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { ClaimController, KeyReconciled } from '../src/claim-controller.js';
import { CLAIM_PLURAL } from '../src/claim-resource.js';
import {
  ALLOW_DELETE,
  claimObject,
  claimReady,
  createReadyClaim,
  deletion,
  makeController,
  type RunningController,
} from './kube-fixtures.js';

describeOnControlPlane('the controller', () => {
  const suite = useReconcilerCluster();
  // Watches served by etcd itself (no watch cache), so a re-watch from a compacted version
  // meets etcd's real 410 Gone.
  const bed = useKubeTestBed({ watchCache: false });
  const serviceAccountUser = `system:serviceaccount:${CONTROLLER_SERVICE_ACCOUNT.namespace}:${CONTROLLER_SERVICE_ACCOUNT.name}`;
  let proxy: FaultProxy;
  let faults: KubeFaultProxy;
  let running: RunningController | undefined;

  beforeAll(async () => {
    const { hostname, port } = new URL(bed.plane.url);
    proxy = await FaultProxy.start({ host: hostname, port: Number(port) });
    faults = await KubeFaultProxy.start(bed.plane);
  });
  afterEach(async () => {
    await proxy.resume();
    faults.clearFaults();
    await running?.stop();
    running = undefined;
  });
  afterAll(async () => {
    await proxy?.close();
    await faults?.close();
  });

  /** A controller reaching the server through `via` (default: the HTTPS fault proxy). */
  async function start(
    onStep?: StepHook,
    via: 'tcp' | 'https' = 'https',
    namespaces?: string[],
  ): Promise<ClaimController> {
    running = await makeController(
      bed,
      { config: suite.config, onStep },
      { server: via === 'tcp' ? `https://127.0.0.1:${proxy.port}` : faults.url, namespaces },
    );
    await running.controller.start();
    return running.controller;
  }

  function spec(name: string): Record<string, unknown> {
    return { instanceLabel: 'atlas', userName: name, databaseName: name };
  }

  it('reconnects after its connections are reset, missing no claim', async () => {
    const controller = await start(undefined, 'tcp');
    const reconnected = nextEvent(controller, 'watch-connect');
    proxy.resetAll();
    await reconnected;
    const ready = claimReady(bed.objects, 'after-drop');
    await bed.objects.create(CLAIM_PLURAL, 'team', claimObject('after-drop', spec('after_drop'), 'team'));
    await ready;
  });

  it('relists after a real 410 Gone: a re-watch from a version etcd compacted away', async () => {
    // One namespace of its own, so no other claim's reconcile moves its watch forward.
    const controller = await start(undefined, 'https', ['compaction']);
    const reconciled = nextEvent<KeyReconciled>(
      controller,
      'reconciled',
      (r) => r.key === 'compaction/quiet',
    );
    await bed.objects.create(CLAIM_PLURAL, 'compaction', claimObject('quiet', spec('quiet'), 'compaction'));
    await reconciled;
    // Move etcd past the controller's last version (a write it does not watch), compact
    // there, and end the controller's watch as the server does at its request timeout: the
    // re-watch from the old version is answered 410 Gone by etcd.
    await bed.objects.create('configmaps', 'team', { metadata: { name: 'bump' }, data: { a: 'b' } });
    const compactedAt = await bed.plane.compact();
    const requests: ProxiedRequest[] = [];
    const record = (request: ProxiedRequest) => requests.push(request);
    faults.on('request', record);
    const claims = (r: ProxiedRequest) => new URL(r.path, 'https://x').pathname.endsWith(`/${CLAIM_PLURAL}`);
    const watching = (r: ProxiedRequest) => new URL(r.path, 'https://x').searchParams.get('watch') === 'true';
    const relisted = nextEvent<ProxiedRequest>(faults, 'request', (r) => claims(r) && !watching(r));
    expect(faults.endWatches()).toBeGreaterThan(0);
    await relisted;
    faults.off('request', record);
    // First the re-watch from the version etcd no longer has, then (after its 410) the list.
    const rewatch = requests.find((r) => claims(r) && watching(r));
    expect(Number(new URL(rewatch!.path, 'https://x').searchParams.get('resourceVersion'))).toBeLessThan(
      compactedAt,
    );
    // And it still works: a new claim is reconciled.
    const ready = claimReady(bed.objects, 'after-compaction');
    await bed.objects.create(
      CLAIM_PLURAL,
      'compaction',
      claimObject('after-compaction', spec('after_compaction'), 'compaction'),
    );
    await ready;
  });

  it('reuses its TLS connections: many API requests over a few handshakes', async () => {
    const handshakesBefore = faults.connections;
    let requests = 0;
    const count = () => {
      requests++;
    };
    faults.on('request', count);
    await start(undefined, 'https', ['reuse']);
    for (const name of ['reuse-one', 'reuse-two', 'reuse-three']) {
      await createReadyClaim(bed.objects, 'reuse', name);
    }
    faults.off('request', count);
    const handshakes = faults.connections - handshakesBefore;
    // Each claim costs ~9 requests; one connection per request would be as many handshakes.
    expect(requests).toBeGreaterThanOrEqual(20);
    expect(handshakes).toBeLessThanOrEqual(6);
  });

  it('retries 5xx answers to its writes (Secret create, status update) until the claim is Ready', async () => {
    await start();
    const injected: string[] = [];
    faults.on('fault', (request: ProxiedRequest, status: number) =>
      injected.push(`${status} ${request.method}`),
    );
    faults.failNext((r) => r.method === 'POST' && r.path.startsWith('/api/v1/namespaces/team/secrets'), 500);
    faults.failNext((r) => r.method === 'PUT' && r.path.endsWith('/databaseclaims/flaky/status'), 503);
    const ready = claimReady(bed.objects, 'flaky');
    await bed.objects.create(CLAIM_PLURAL, 'team', claimObject('flaky', spec('flaky'), 'team'));
    await ready;
    expect(injected.sort()).toEqual(['500 POST', '503 PUT']);
    expect(await bed.objects.get('secrets', 'team', 'flaky')).toBeDefined();
  });

  it('re-reads and retries a status write that got a real 409 Conflict', async () => {
    await start();
    // Someone else updates the claim between the controller's read and its status write:
    // the write goes to the real server with a stale resourceVersion.
    let touched = false;
    const answers: Array<number | undefined> = [];
    const custom = running!.clients.custom;
    const replaceStatus = custom.replaceNamespacedCustomObjectStatus.bind(custom);
    custom.replaceNamespacedCustomObjectStatus = (async (param: Parameters<typeof replaceStatus>[0]) => {
      if (param.name !== 'contended') return replaceStatus(param);
      if (!touched) {
        touched = true;
        await bed.objects.patch(CLAIM_PLURAL, 'team', 'contended', {
          metadata: { labels: { touched: 'yes' } },
        });
      }
      try {
        const written = await replaceStatus(param);
        answers.push(200);
        return written;
      } catch (error) {
        answers.push((error as { code?: number }).code);
        throw error;
      }
    }) as typeof custom.replaceNamespacedCustomObjectStatus;
    const ready = claimReady(bed.objects, 'contended');
    const reconciled = nextEvent<KeyReconciled>(
      running!.controller,
      'reconciled',
      (r) => r.key === 'team/contended',
    );
    await bed.objects.create(CLAIM_PLURAL, 'team', claimObject('contended', spec('contended'), 'team'));
    const claim = (await ready).object;
    await reconciled;
    expect(touched).toBe(true);
    expect(claim.metadata.labels).toEqual({ touched: 'yes' });
    // The server's answers as the controller got them, and as the server logged them.
    expect(answers).toEqual([409, 200]);
    const statusWrites = (await bed.plane.settledAuditEntries()).filter(
      (entry) =>
        entry.objectRef?.name === 'contended' &&
        entry.objectRef.subresource === 'status' &&
        entry.verb === 'update' &&
        entry.user.username === serviceAccountUser,
    );
    expect(statusWrites.map((entry) => entry.responseStatus?.code)).toEqual([409, 200]);
  });

  it('finalizes a claim deleted while its reconcile runs: no Secret left, claim gone', async () => {
    let deleted = false;
    const controller = await start(async (step) => {
      if (deleted || step.claim !== 'team/doomed' || step.action !== 'publish-secret') return;
      deleted = true;
      await bed.objects.delete(CLAIM_PLURAL, 'team', 'doomed');
    });
    const gone = deletion(bed.objects, CLAIM_PLURAL, 'doomed');
    const finalized = nextEvent<KeyReconciled>(
      controller,
      'reconciled',
      (r) => r.key === 'team/doomed' && r.outcome === 'finalized',
    );
    await bed.objects.create(
      CLAIM_PLURAL,
      'team',
      claimObject('doomed', { ...spec('doomed'), deletionPolicy: 'Delete' }, 'team', ALLOW_DELETE),
    );
    await gone;
    await finalized;
    expect(deleted).toBe(true);
    expect(await bed.objects.get('secrets', 'team', 'doomed')).toBeUndefined();
    const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['doomed']);
    expect(rows).toHaveLength(0);
  });
});
