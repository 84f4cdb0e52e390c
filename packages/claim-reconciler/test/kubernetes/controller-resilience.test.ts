/**
 * The controller when the API misbehaves or races it, on the REAL control plane (real
 * PostgreSQL): watch connections cut by a TCP fault proxy between the controller and
 * kube-apiserver; `410 Gone` after a real etcd compaction (watch cache off, so watches are
 * etcd's own); a status write that gets a real `409 Conflict` (another writer goes first,
 * through the test's hold on the controller's client); a claim deleted while its reconcile
 * runs.
 */
import {
  CONTROLLER_SERVICE_ACCOUNT,
  describeOnControlPlane,
  FaultProxy,
  nextEvent,
  useKubeTestBed,
} from 'hotload-test-support';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { StepHook } from '../../src/index.js';
import type { ClaimController, KeyReconciled } from '../../src/kubernetes/claim-controller.js';
import { CLAIM_PLURAL } from '../../src/kubernetes/claim-resource.js';
import { useReconcilerCluster } from '../fixtures.js';
import {
  claimObject,
  claimReady,
  deletion,
  makeController,
  type RunningController,
} from './kube-fixtures.js';

describeOnControlPlane('the controller', () => {
  const suite = useReconcilerCluster();
  // Watches served by etcd itself (no watch cache) and ended every 5–10 s, so a re-watch
  // from a compacted version meets etcd's real 410 Gone.
  const bed = useKubeTestBed({ watchCache: false, minRequestTimeoutSeconds: 5 });
  const serviceAccountUser = `system:serviceaccount:${CONTROLLER_SERVICE_ACCOUNT.namespace}:${CONTROLLER_SERVICE_ACCOUNT.name}`;
  let proxy: FaultProxy;
  let running: RunningController | undefined;

  beforeAll(async () => {
    const { hostname, port } = new URL(bed.plane.url);
    proxy = await FaultProxy.start({ host: hostname, port: Number(port) });
  });
  afterEach(async () => {
    await proxy.resume();
    await running?.stop();
    running = undefined;
  });
  afterAll(async () => {
    await proxy?.close();
  });

  async function start(onStep?: StepHook): Promise<ClaimController> {
    running = await makeController(
      bed,
      { config: suite.config, onStep },
      { server: `https://127.0.0.1:${proxy.port}` },
    );
    await running.controller.start();
    return running.controller;
  }

  function spec(name: string): Record<string, unknown> {
    return { instanceLabel: 'atlas', userName: name, databaseName: name };
  }

  it('reconnects after its watch connections are cut, missing no claim', async () => {
    const controller = await start();
    const reconnected = nextEvent(controller, 'watch-connect');
    proxy.resetAll();
    await reconnected;
    const ready = claimReady(bed.objects, 'after-drop');
    await bed.objects.create(CLAIM_PLURAL, 'team', claimObject('after-drop', spec('after_drop'), 'team'));
    await ready;
  });

  it('relists after a real 410 Gone: a re-watch from a version etcd compacted away', async () => {
    const controller = await start();
    await (async () => {
      const ready = claimReady(bed.objects, 'before-compaction');
      await bed.objects.create(
        CLAIM_PLURAL,
        'team',
        claimObject('before-compaction', spec('before_compaction'), 'team'),
      );
      await ready;
    })();
    // Move etcd past the controller's last version (a write it does not watch), compact
    // there; the server ends the watch (--min-request-timeout) and the re-watch from the old
    // version is answered 410 Gone by etcd.
    await bed.objects.create('configmaps', 'team', { metadata: { name: 'bump' }, data: { a: 'b' } });
    const compactedAt = await bed.plane.compact();
    const relisted = () =>
      bed.plane
        .auditEntries()
        .some(
          (entry) =>
            entry.user.username === serviceAccountUser &&
            entry.verb === 'list' &&
            entry.objectRef?.resource === CLAIM_PLURAL &&
            Date.parse(entry.stageTimestamp ?? '') > compactedAtTime,
        );
    const compactedAtTime = Date.now();
    while (!relisted()) await nextEvent(controller, 'watch-connect', () => true, { timeoutMillis: 30_000 });
    const staleWatches = bed.plane
      .auditEntries()
      .filter(
        (entry) =>
          entry.user.username === serviceAccountUser &&
          entry.verb === 'watch' &&
          entry.objectRef?.resource === CLAIM_PLURAL &&
          Number(new URL(entry.requestURI, 'https://x').searchParams.get('resourceVersion')) < compactedAt &&
          Date.parse(entry.stageTimestamp ?? '') > compactedAtTime,
      );
    expect(staleWatches.length).toBeGreaterThan(0);
    // And it still works: a new claim is reconciled.
    const ready = claimReady(bed.objects, 'after-compaction');
    await bed.objects.create(
      CLAIM_PLURAL,
      'team',
      claimObject('after-compaction', spec('after_compaction'), 'team'),
    );
    await ready;
  });

  it('re-reads and retries a status write that got a real 409 Conflict', async () => {
    await start();
    // Someone else updates the claim between the controller's read and its status write:
    // the write goes to the real server with a stale resourceVersion.
    let touched = false;
    const custom = running!.clients.custom;
    const replaceStatus = custom.replaceNamespacedCustomObjectStatus.bind(custom);
    custom.replaceNamespacedCustomObjectStatus = (async (param: Parameters<typeof replaceStatus>[0]) => {
      if (!touched && param.name === 'contended') {
        touched = true;
        await bed.objects.patch(CLAIM_PLURAL, 'team', 'contended', {
          metadata: { labels: { touched: 'yes' } },
        });
      }
      return replaceStatus(param);
    }) as typeof custom.replaceNamespacedCustomObjectStatus;
    const ready = claimReady(bed.objects, 'contended');
    await bed.objects.create(CLAIM_PLURAL, 'team', claimObject('contended', spec('contended'), 'team'));
    const claim = (await ready).object;
    expect(touched).toBe(true);
    expect(claim.metadata.labels).toEqual({ touched: 'yes' });
    const statusWrites = bed.plane
      .auditEntries()
      .filter(
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
      claimObject('doomed', { ...spec('doomed'), deletionPolicy: 'Delete' }, 'team'),
    );
    await gone;
    await finalized;
    expect(deleted).toBe(true);
    expect(await bed.objects.get('secrets', 'team', 'doomed')).toBeUndefined();
    const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['doomed']);
    expect(rows).toHaveLength(0);
  });
});
