/**
 * The controller on the REAL control plane (kube-apiserver, etcd, the garbage collector),
 * under its own RBAC, and a real PostgreSQL: a claim resource gets a
 * database, an owned Opaque Secret (the folder mode's keys), status with conditions and
 * Events; a rotation updates the Secret in place; deletion applies the deletion policy
 * behind the finalizer.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseReconcilerConfig } from 'hotload-claim-reconciler';
import {
  CONTROLLER_SERVICE_ACCOUNT,
  DEPLOY_DIR,
  describeOnControlPlane,
  nextEvent,
  useKubeTestBed,
} from 'hotload-test-support';
import { canLogin, useReconcilerCluster } from 'hotload-test-support/claims';
import pg from 'pg';
import { afterEach, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import type { ClaimController, KeyReconciled } from '../src/claim-controller.js';
import { DEFAULT_RECORDS_NAME as RECORDS, RECORDS_LABEL } from '../src/claim-records.js';
import { CLAIM_FINALIZER, CLAIM_PLURAL } from '../src/claim-resource.js';
import {
  ALLOW_DELETE,
  claimObject,
  claimReady,
  createReadyClaim,
  deletion,
  eventsFor,
  makeController,
  nextChange,
  type RunningController,
  readyStatus,
  secretData,
  storedRecord,
  syncedCondition,
} from './kube-fixtures.js';

describeOnControlPlane('a DatabaseClaim resource', () => {
  const suite = useReconcilerCluster();
  const bed = useKubeTestBed();
  let running: RunningController | undefined;
  let clock = new Date();

  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  async function start(configText = suite.configText): Promise<ClaimController> {
    const config = parseReconcilerConfig(configText, suite.configFile);
    running = await makeController(bed, { config, now: () => clock });
    return running.controller;
  }

  it('gets a database, an owned Opaque Secret, status conditions and a Created event', async () => {
    await (await start()).start();
    const ready = claimReady(bed.objects, 'orders');
    // The Event is recorded after the status write: wait for it, not for Ready alone.
    const createdEvent = nextChange(
      bed.objects,
      (c) =>
        c.plural === 'events' &&
        c.object.reason === 'Created' &&
        (c.object.involvedObject as { name: string }).name === 'orders',
    );
    const created = await bed.objects.create(
      CLAIM_PLURAL,
      'shop',
      claimObject(
        'orders',
        { instanceLabel: 'atlas', userName: 'orders', databaseName: 'orders', secretName: 'orders-db' },
        'shop',
      ),
    );
    const claim = (await ready).object;

    const secret = await bed.objects.get('secrets', 'shop', 'orders-db');
    expect(secret?.type).toBe('Opaque');
    expect(secret?.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'DatabaseClaim',
        name: 'orders',
        uid: created.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      }),
    ]);
    const data = secretData(secret);
    expect(Object.keys(data).sort()).toEqual([
      'database',
      'dsn.txt',
      'hostname',
      'password',
      'port',
      'sslmode',
      'uri_dsn.txt',
      'username',
    ]);
    expect(data.username).toBe('orders_a');
    expect(await canLogin(suite.cluster, data.username!, data.password!, 'orders')).toBe(true);

    expect(claim.metadata.finalizers).toContain(CLAIM_FINALIZER);
    const status = claim.status as Record<string, unknown>;
    expect(status).toMatchObject({
      activeUser: 'orders_a',
      matchedLabel: 'atlas',
      error: null,
      observedGeneration: 1,
    });
    expect(status.conditions).toEqual([
      expect.objectContaining({ type: 'Ready', status: 'True', observedGeneration: 1 }),
      expect.objectContaining({ type: 'Synced', status: 'True', reason: 'Reconciled' }),
    ]);
    await createdEvent;
    const events = await eventsFor(bed.objects, 'shop', 'orders');
    expect(events.map((e) => e.reason)).toContain('Created');
    // Never the password: not in the status, not in an event.
    expect(JSON.stringify(status)).not.toContain(data.password);
    expect(JSON.stringify(events)).not.toContain(data.password);
  });

  it('rotates in place: same Secret object, the other user, the previous password still valid', async () => {
    const ctl = await start();
    await ctl.start();
    const before = (await bed.objects.get('secrets', 'shop', 'orders-db'))!;
    const old = secretData(before);
    clock = new Date(clock.getTime() + 61 * 60_000);
    const rotated = nextChange(
      bed.objects,
      (c) => c.plural === 'secrets' && c.type === 'MODIFIED' && c.object.metadata.name === 'orders-db',
    );
    const event = nextChange(bed.objects, (c) => c.plural === 'events' && c.object.reason === 'Rotated');
    ctl.enqueueAll();
    const after = (await rotated).object;
    expect(after.metadata.uid).toBe(before.metadata.uid);
    const data = secretData(after);
    expect(data.username).toBe('orders_b');
    expect(await canLogin(suite.cluster, data.username!, data.password!, 'orders')).toBe(true);
    expect(await canLogin(suite.cluster, old.username!, old.password!, 'orders')).toBe(true);
    expect((await event).object.message).toContain('published orders_b');
  });

  it('an invalid spec gets Ready=False with the field named, and no Secret', async () => {
    await (await start()).start();
    const notReady = claimReady(bed.objects, 'broken', 'False');
    await bed.objects.create(
      CLAIM_PLURAL,
      'shop',
      claimObject('broken', { instanceLabel: 'atlas', userName: 'broken', databaseName: 'postgres' }, 'shop'),
    );
    const claim = (await notReady).object;
    const synced = (claim.status as { conditions: Array<{ type: string; reason: string; message: string }> })
      .conditions[1]!;
    expect(synced).toMatchObject({ type: 'Synced', reason: 'InvalidSpec' });
    expect(synced.message).toContain('spec.databaseName');
    expect(await bed.objects.get('secrets', 'shop', 'broken')).toBeUndefined();
    await bed.objects.delete(CLAIM_PLURAL, 'shop', 'broken');
  });

  it('a claim edited into an invalid spec is still cleaned up by its recorded policy on deletion', async () => {
    await (await start()).start();
    await createReadyClaim(bed.objects, 'shop', 'edited', { deletionPolicy: 'Delete' }, ALLOW_DELETE);
    const invalid = claimReady(bed.objects, 'edited', 'False');
    // Admission accepts it (the field is preserved); only the reconciler refuses it.
    await bed.objects.patch(CLAIM_PLURAL, 'shop', 'edited', { spec: { enableSuperUser: true } });
    await invalid;
    const gone = deletion(bed.objects, CLAIM_PLURAL, 'edited');
    await bed.objects.delete(CLAIM_PLURAL, 'shop', 'edited');
    await gone;
    const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['edited']);
    expect(rows).toHaveLength(0);
    expect(await bed.objects.get('secrets', 'shop', 'edited')).toBeUndefined();
  });

  it('never overwrites a Secret of that name that the claim does not own; its retries fold into one Event', async () => {
    const controller = await start();
    await controller.start();
    const failures = countReconciles(controller, 'shop/intruder', 4);
    await bed.objects.create('secrets', 'shop', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'taken' },
      data: { keep: 'bWluZQ==' },
    });
    const notReady = claimReady(bed.objects, 'intruder', 'False');
    await bed.objects.create(
      CLAIM_PLURAL,
      'shop',
      claimObject(
        'intruder',
        { instanceLabel: 'atlas', userName: 'intruder', databaseName: 'intruder', secretName: 'taken' },
        'shop',
      ),
    );
    const synced = (
      (await notReady).object.status as { conditions: Array<{ reason: string; message: string }> }
    ).conditions[1]!;
    expect(synced.reason).toBe('ReconcileError');
    expect(synced.message).toContain('not owned by DatabaseClaim intruder');
    expect((await bed.objects.get('secrets', 'shop', 'taken'))?.data).toEqual({ keep: 'bWluZQ==' });
    // Retried with backoff, failing the same way each time: one Event, its count going up
    // (as client-go's recorder folds repeats), not one Event per attempt.
    expect(await failures).toEqual(['error', 'error', 'error', 'error']);
    const failed = (await eventsFor(bed.objects, 'shop', 'intruder')).filter(
      (e) => e.reason === 'ReconcileFailed',
    );
    expect(failed).toHaveLength(1);
    expect(failed[0]?.count).toBeGreaterThanOrEqual(4);
  });

  it('deletion applies the policy (Delete drops the database) and then removes the finalizer', async () => {
    await (await start()).start();
    await createReadyClaim(bed.objects, 'shop', 'gone', { deletionPolicy: 'Delete' }, ALLOW_DELETE);
    expect(await bed.objects.get('secrets', 'shop', 'gone')).toBeDefined();
    const deleted = deletion(bed.objects, CLAIM_PLURAL, 'gone');
    await bed.objects.delete(CLAIM_PLURAL, 'shop', 'gone');
    await deleted;
    expect(await bed.objects.get('secrets', 'shop', 'gone')).toBeUndefined();
    const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['gone']);
    expect(rows).toHaveLength(0);
    expect(await bed.objects.get(CLAIM_PLURAL, 'shop', 'gone')).toBeUndefined();
  });

  it("a claim whose finalizer was stripped by hand is still cleaned up by the controller's record", async () => {
    const controller = await start();
    await controller.start();
    // The record is written beside the status: the reconcile's end, not Ready, says it is in.
    const reconciled = nextEvent<KeyReconciled>(controller, 'reconciled', (r) => r.key === 'shop/stripped');
    const created = await createReadyClaim(
      bed.objects,
      'shop',
      'stripped',
      { deletionPolicy: 'Delete' },
      ALLOW_DELETE,
    );
    expect((await reconciled).outcome).toBe('created');
    // A ConfigMap of its own, with where the claim's database and users live: never a password.
    const stored = await storedRecord(bed.objects, 'shop/stripped');
    expect(stored?.record).toMatchObject({
      uid: created.object.metadata.uid,
      secretName: 'stripped',
      binding: expect.objectContaining({ databaseName: 'stripped' }),
      allowDataDeletion: true,
    });
    const finalized = nextEvent<KeyReconciled>(
      controller,
      'reconciled',
      (r) => r.key === 'shop/stripped' && r.outcome === 'finalized',
    );
    // What a hurried operator does: no finalizer, so the object is gone at once.
    await bed.objects.patch(CLAIM_PLURAL, 'shop', 'stripped', { metadata: { finalizers: null } });
    await bed.objects.delete(CLAIM_PLURAL, 'shop', 'stripped');
    expect((await finalized).error).toBeUndefined();
    const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['stripped']);
    expect(rows).toHaveLength(0);
    expect(await storedRecord(bed.objects, 'shop/stripped')).toBeUndefined();
    expect(
      await bed.objects.get('configmaps', CONTROLLER_SERVICE_ACCOUNT.namespace, stored!.name),
    ).toBeUndefined();
  });

  it('records of the earlier format (one shared ConfigMap) still count: moved to a ConfigMap per claim, the shared one deleted', async () => {
    const config = parseReconcilerConfig(suite.configText, suite.configFile);
    const inLegacy = { namespaces: ['legacy'] };
    running = await makeController(bed, { config, now: () => clock }, inLegacy);
    await running.controller.start();
    const done = settle(running.controller, 2);
    await createReadyClaim(bed.objects, 'legacy', 'old-gone', { deletionPolicy: 'Delete' }, ALLOW_DELETE);
    await createReadyClaim(bed.objects, 'legacy', 'old-kept');
    expect(await done).toEqual(['created', 'created']);
    await running.stop();
    running = undefined;
    // The same records as the earlier format kept them: one ConfigMap, a field per claim.
    const namespace = CONTROLLER_SERVICE_ACCOUNT.namespace;
    const gone = (await storedRecord(bed.objects, 'legacy/old-gone'))!;
    const kept = (await storedRecord(bed.objects, 'legacy/old-kept'))!;
    await bed.objects.delete('configmaps', namespace, gone.name);
    await bed.objects.delete('configmaps', namespace, kept.name);
    await bed.objects.create('configmaps', namespace, {
      metadata: { name: RECORDS },
      data: {
        'legacy.old-gone': JSON.stringify(gone.record),
        'legacy.old-kept': JSON.stringify(kept.record),
      },
    });
    // old-gone vanishes while no controller runs: only the shared ConfigMap knows it.
    await bed.objects.patch(CLAIM_PLURAL, 'legacy', 'old-gone', { metadata: { finalizers: null } });
    const deleted = deletion(bed.objects, CLAIM_PLURAL, 'old-gone');
    await bed.objects.delete(CLAIM_PLURAL, 'legacy', 'old-gone');
    await deleted;

    running = await makeController(bed, { config, now: () => clock }, inLegacy);
    const finalized = countReconciles(running.controller, 'legacy/old-gone', 1);
    await running.controller.start();
    expect(await finalized).toEqual(['finalized']);
    const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['old_gone']);
    expect(rows).toHaveLength(0);
    expect(await storedRecord(bed.objects, 'legacy/old-gone')).toBeUndefined();
    expect((await storedRecord(bed.objects, 'legacy/old-kept'))?.record).toEqual(kept.record);
    expect(await bed.objects.get('configmaps', namespace, RECORDS)).toBeUndefined();
  });

  it('a shared ConfigMap of the earlier format with a field that does not parse: the others moved, it kept, the field named', async () => {
    const namespace = CONTROLLER_SERVICE_ACCOUNT.namespace;
    const good = { uid: 'u-good', secretName: 'good', binding: null, retired: [], allowDataDeletion: false };
    await bed.objects.create('configmaps', namespace, {
      metadata: { name: RECORDS },
      data: { 'shared.good': JSON.stringify(good), 'shared.bad': '{"uid": 1}' },
    });
    try {
      const config = parseReconcilerConfig(suite.configText, suite.configFile);
      running = await makeController(bed, { config, now: () => clock }, { namespaces: ['shared'] });
      await running.controller.start();
      expect((await storedRecord(bed.objects, 'shared/good'))?.record).toEqual(good);
      expect(running.controller.unreadableRecords).toEqual([
        {
          configMap: `${namespace}/${RECORDS}`,
          problem: `claim record ConfigMap ${namespace}/${RECORDS}, field shared.bad: not a claim record (uid, secretName and retired are required)`,
        },
      ]);
      expect((await bed.objects.get('configmaps', namespace, RECORDS))?.data).toMatchObject({
        'shared.bad': '{"uid": 1}',
      });
    } finally {
      await bed.objects.delete('configmaps', namespace, RECORDS);
      const moved = await storedRecord(bed.objects, 'shared/good');
      if (moved) await bed.objects.delete('configmaps', namespace, moved.name);
    }
  });

  it('a record ConfigMap edited into something else stops nothing: named in a warning and the gauge, left as it is, written over by its claim', async () => {
    const namespace = CONTROLLER_SERVICE_ACCOUNT.namespace;
    // The record of claim edited/e-one (its ConfigMap's name is the hash of that key), cut
    // short by hand; and one whose claim field is gone, which no claim can write over.
    const ownName = `${RECORDS}-${createHash('sha256').update('edited/e-one').digest('hex').slice(0, 20)}`;
    const orphanName = `${RECORDS}-edited`;
    const labels = { [RECORDS_LABEL]: RECORDS };
    await bed.objects.create('configmaps', namespace, {
      metadata: { name: ownName, labels },
      data: { claim: 'edited/e-one', record: '{"uid": "u", "secretName": ' },
    });
    await bed.objects.create('configmaps', namespace, {
      metadata: { name: orphanName, labels },
      data: { record: '{}' },
    });
    try {
      const warnings: string[] = [];
      const quiet = () => undefined;
      const logger = {
        debug: quiet,
        info: quiet,
        error: quiet,
        warn: (_fields: object, message: string) => void warnings.push(message),
      };
      const config = parseReconcilerConfig(suite.configText, suite.configFile);
      running = await makeController(bed, { config, now: () => clock }, { namespaces: ['edited'], logger });
      await running.controller.start();
      const ownProblem = `claim record ConfigMap ${namespace}/${ownName}, field record: not JSON`;
      const orphanProblem = `claim record ConfigMap ${namespace}/${orphanName}, field claim: missing`;
      expect(running.controller.unreadableRecords).toEqual(
        expect.arrayContaining([
          { configMap: `${namespace}/${ownName}`, problem: ownProblem },
          { configMap: `${namespace}/${orphanName}`, problem: orphanProblem },
        ]),
      );
      expect(running.controller.unreadableRecords).toHaveLength(2);
      expect(warnings).toEqual(
        expect.arrayContaining([expect.stringContaining(ownProblem), expect.stringContaining(orphanProblem)]),
      );

      // The claim it records still exists: its reconcile writes the record over the edited one.
      const reconciled = nextEvent<KeyReconciled>(
        running.controller,
        'reconciled',
        (r) => r.key === 'edited/e-one',
      );
      const created = await createReadyClaim(bed.objects, 'edited', 'e-one');
      expect((await reconciled).outcome).toBe('created');
      const stored = await storedRecord(bed.objects, 'edited/e-one');
      expect(stored?.name).toBe(ownName);
      expect(stored?.record).toMatchObject({ uid: created.object.metadata.uid, secretName: 'e-one' });
      expect(running.controller.unreadableRecords).toEqual([
        { configMap: `${namespace}/${orphanName}`, problem: orphanProblem },
      ]);
      // The one no claim owns is left exactly as it was.
      expect((await bed.objects.get('configmaps', namespace, orphanName))?.data).toEqual({ record: '{}' });
    } finally {
      await bed.objects.delete('configmaps', namespace, orphanName);
    }
  });

  it("a new claim's Secret is created without reading it first: the Secret cache knows it is absent", async () => {
    const config = parseReconcilerConfig(suite.configText, suite.configFile);
    running = await makeController(bed, { config, now: () => clock }, { namespaces: ['fresh'] });
    await running.controller.start();
    const done = settle(running.controller, 1);
    await createReadyClaim(bed.objects, 'fresh', 'f-one');
    expect(await done).toEqual(['created']);
    const user = `system:serviceaccount:${CONTROLLER_SERVICE_ACCOUNT.namespace}:${CONTROLLER_SERVICE_ACCOUNT.name}`;
    const secretRequests = (await bed.plane.settledAuditEntries()).filter(
      (e) =>
        e.user.username === user &&
        e.objectRef?.resource === 'secrets' &&
        e.objectRef.namespace === 'fresh' &&
        e.objectRef.name === 'f-one',
    );
    expect(secretRequests.map((e) => e.verb)).toEqual(['create']);
  });

  it('a claim deleted while no controller ran is cleaned up by its record when one starts: data kept without the annotation', async () => {
    await (await start()).start();
    const created = await createReadyClaim(bed.objects, 'shop', 'vanished', { deletionPolicy: 'Delete' });
    const data = secretData(await bed.objects.get('secrets', 'shop', 'vanished'));
    expect(created.object.metadata.finalizers).toContain(CLAIM_FINALIZER);
    await running?.stop();
    running = undefined;
    await bed.objects.patch(CLAIM_PLURAL, 'shop', 'vanished', { metadata: { finalizers: null } });
    const gone = deletion(bed.objects, CLAIM_PLURAL, 'vanished');
    await bed.objects.delete(CLAIM_PLURAL, 'shop', 'vanished');
    await gone;
    expect(await canLogin(suite.cluster, data.username!, data.password!, 'vanished')).toBe(true);

    const next = await start();
    const finalized = countReconciles(next, 'shop/vanished', 1);
    await next.start();
    expect(await finalized).toEqual(['finalized']);
    // Delete without the allow-delete annotation: the data stays, the logins do not.
    const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', ['vanished']);
    expect(rows).toHaveLength(1);
    expect(await canLogin(suite.cluster, data.username!, data.password!, 'vanished')).toBe(false);
  });

  it('claims wanting the same login users: the rule of folder mode (first by namespace/name, the holder keeps them)', async () => {
    // Stopped while both claims are created, so neither is reconciled before the other exists.
    const spec = { instanceLabel: 'atlas', userName: 'twin_user' };
    await bed.objects.create(
      CLAIM_PLURAL,
      'twin-b',
      claimObject('app', { ...spec, databaseName: 'twin_b' }, 'twin-b'),
    );
    await bed.objects.create(
      CLAIM_PLURAL,
      'twin-a',
      claimObject('app', { ...spec, databaseName: 'twin_a' }, 'twin-a'),
    );
    const controller = await start();
    const settled = countReconciles(controller, 'twin-b/app', 1);
    const ready = claimReady(bed.objects, 'app');
    await controller.start();
    const owner = (await ready).object;
    expect(owner.metadata.namespace).toBe('twin-a');
    expect(await settled).toEqual(['error']);
    const loser = await bed.objects.get(CLAIM_PLURAL, 'twin-b', 'app');
    expect(syncedCondition(loser)?.message).toContain('already managed by claim twin-a/app');
    // And the holder keeps them against a newcomer first by name.
    const refused = nextChange(
      bed.objects,
      (c) =>
        c.plural === CLAIM_PLURAL &&
        c.object.metadata.namespace === 'twin-0' &&
        readyStatus(c.object) === 'False',
    );
    await bed.objects.create(
      CLAIM_PLURAL,
      'twin-0',
      claimObject('app', { ...spec, databaseName: 'twin_0' }, 'twin-0'),
    );
    expect(syncedCondition((await refused).object)?.message).toContain('already managed by claim twin-a/app');
  });

  it('its own finalizer and status writes do not reconcile a claim again; an annotation does', async () => {
    const config = parseReconcilerConfig(suite.configText, suite.configFile);
    // One worker: keys are reconciled in the order their watch events arrived.
    running = await makeController(bed, { config, now: () => clock }, { namespaces: ['echo'], workers: 1 });
    const controller = running.controller;
    const seen: string[] = [];
    controller.on('reconciled', (r: KeyReconciled) => seen.push(`${r.key} ${r.outcome}`));
    await controller.start();
    const first = nextEvent<KeyReconciled>(controller, 'reconciled', (r) => r.key === 'echo/e-one');
    await createReadyClaim(bed.objects, 'echo', 'e-one');
    await first;
    // e-one's finalizer and status writes come before e-two's creation on the watch: had
    // either requeued e-one, that reconcile would have run before e-two's.
    const second = nextEvent<KeyReconciled>(controller, 'reconciled', (r) => r.key === 'echo/e-two');
    await createReadyClaim(bed.objects, 'echo', 'e-two');
    await second;
    expect(seen).toEqual(['echo/e-one created', 'echo/e-two created']);

    // The allow-delete annotation changes no generation, but the record must learn it.
    const annotated = nextEvent<KeyReconciled>(controller, 'reconciled', (r) => r.key === 'echo/e-one');
    await bed.objects.patch(CLAIM_PLURAL, 'echo', 'e-one', { metadata: { annotations: ALLOW_DELETE } });
    expect((await annotated).outcome).toBe('unchanged');
    expect((await storedRecord(bed.objects, 'echo/e-one'))?.record.allowDataDeletion).toBe(true);
  });

  it('a Secret deleted by someone else is published again at once, not at the next resync', async () => {
    const config = parseReconcilerConfig(suite.configText, suite.configFile);
    // The default resync (10 minutes) is far beyond the test's wait: only the Secret watch can do it.
    running = await makeController(bed, { config, now: () => clock }, { namespaces: ['secret-gone'] });
    await running.controller.start();
    await createReadyClaim(bed.objects, 'secret-gone', 's-one');
    const original = await bed.objects.get('secrets', 'secret-gone', 's-one');
    const recreated = nextChange(
      bed.objects,
      (c) =>
        c.plural === 'secrets' &&
        c.type === 'ADDED' &&
        c.object.metadata.name === 's-one' &&
        c.object.metadata.uid !== original?.metadata.uid,
    );
    await bed.objects.delete('secrets', 'secret-gone', 's-one');
    const data = secretData((await recreated).object);
    expect(await canLogin(suite.cluster, data.username!, data.password!, 's_one')).toBe(true);
  });

  it('a resync of unchanged claims writes nothing: no status, Secret or Event write', async () => {
    // Its own namespace: the claims elsewhere in this file are left failing on purpose.
    const config = parseReconcilerConfig(suite.configText, suite.configFile);
    running = await makeController(bed, { config, now: () => clock }, { namespaces: ['resync'] });
    const controller = running.controller;
    await controller.start();
    const created = settle(controller, 3);
    for (const name of ['r-one', 'r-two', 'r-three']) await createReadyClaim(bed.objects, 'resync', name);
    expect(await created).toEqual(['created', 'created', 'created']);
    const before = (await bed.plane.settledAuditEntries()).length;
    const outcomes = settle(controller, 3);
    controller.enqueueAll();
    expect(await outcomes).toEqual(['unchanged', 'unchanged', 'unchanged']);
    const writes = (await bed.plane.settledAuditEntries())
      .slice(before)
      .filter(
        (e) =>
          e.user.username.startsWith('system:serviceaccount:') && !['get', 'list', 'watch'].includes(e.verb),
      );
    expect(writes.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
    // Nor reads: the claims and their Secrets come from the informers' caches.
    const reads = (await bed.plane.settledAuditEntries())
      .slice(before)
      .filter((e) => e.user.username.startsWith('system:serviceaccount:') && e.verb === 'get');
    expect(reads.map((e) => `${e.verb} ${e.requestURI}`)).toEqual([]);
  });

  it('a plain kubectl delete of a Delete-policy claim keeps the data: database kept, logins disabled, a DataKept event', async () => {
    await (await start()).start();
    const created = (await createReadyClaim(bed.objects, 'shop', 'ledger', { deletionPolicy: 'Delete' }))
      .object;
    const data = secretData(await bed.objects.get('secrets', 'shop', 'ledger'));
    const session = new pg.Client(
      suite.cluster.connectionConfig({ user: data.username!, password: data.password!, database: 'ledger' }),
    );
    await session.connect();
    await session.query('CREATE TABLE keep_me (id int); INSERT INTO keep_me VALUES (1)');
    const ended = new Promise<void>((resolve) => session.on('error', () => resolve()));
    const kept = nextChange(bed.objects, (c) => c.plural === 'events' && c.object.reason === 'DataKept');
    const gone = deletion(bed.objects, CLAIM_PLURAL, 'ledger');
    const deleted = await bed.plane.kubectl([
      'delete',
      'databaseclaim',
      'ledger',
      '-n',
      'shop',
      '--wait=false',
    ]);
    expect(deleted.code).toBe(0);
    await gone;
    const event = (await kept).object;
    expect(event.type).toBe('Warning');
    expect(event.message).toContain('kept database');
    expect(event.message).toContain('hotload-claim-reconciler/allow-delete');
    expect((event.involvedObject as { uid: string }).uid).toBe(created.metadata.uid);
    // The data stays; the users' access does not: no new login, and the open session ended.
    const { rows } = await suite.cluster.query<{ id: number }>('SELECT id FROM keep_me', [], 'ledger');
    expect(rows).toEqual([{ id: 1 }]);
    expect(await canLogin(suite.cluster, data.username!, data.password!, 'ledger')).toBe(false);
    await ended;
    await session.end().catch(() => {});
    // The Secret is gone with the claim (the controller removes it).
    expect(await bed.objects.get('secrets', 'shop', 'ledger')).toBeUndefined();
  });

  it('needed every verb deploy/02-rbac.yaml grants it (Leases: the leader election test), and was never refused', async () => {
    const user = `system:serviceaccount:${CONTROLLER_SERVICE_ACCOUNT.namespace}:${CONTROLLER_SERVICE_ACCOUNT.name}`;
    const requests = (await bed.plane.settledAuditEntries()).filter((entry) => entry.user.username === user);
    const refused = requests.filter((entry) => entry.responseStatus?.code === 403);
    expect(refused.map((entry) => `${entry.verb} ${entry.requestURI}`)).toEqual([]);
    const used = new Set(
      requests.map(
        (e) =>
          `${e.objectRef?.resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''} ${e.verb}`,
      ),
    );
    const granted = parseAllDocuments(await readFile(join(DEPLOY_DIR, '02-rbac.yaml'), 'utf8'))
      .map(
        (document) =>
          document.toJS() as { kind: string; rules?: Array<{ resources: string[]; verbs: string[] }> },
      )
      .filter((document) => document.kind === 'ClusterRole')
      .flatMap((role) => role.rules ?? [])
      .flatMap((rule) =>
        rule.resources.flatMap((resource) => rule.verbs.map((verb) => `${resource} ${verb}`)),
      );
    // With OwnerReferencesPermissionEnforcement, setting blockOwnerDeletion is authorized
    // against the owner's finalizers: a check the server makes, not a request in the log.
    const checkedOnly = ['databaseclaims/finalizers update'];
    expect(granted.filter((grant) => !used.has(grant) && !checkedOnly.includes(grant))).toEqual([]);
  });
});

/** Resolves with the outcomes of the next `count` reconciles of `controller`. */
function settle(controller: ClaimController, count: number): Promise<string[]> {
  return new Promise((resolve) => {
    const outcomes: string[] = [];
    const listener = (event: KeyReconciled) => {
      outcomes.push(event.outcome);
      if (outcomes.length < count) return;
      controller.off('reconciled', listener);
      resolve(outcomes);
    };
    controller.on('reconciled', listener);
  });
}

/** Resolves with the outcomes of the next `count` reconciles of `key`. */
function countReconciles(controller: ClaimController, key: string, count: number): Promise<string[]> {
  return new Promise((resolve) => {
    const outcomes: string[] = [];
    const listener = (event: KeyReconciled) => {
      if (event.key !== key) return;
      outcomes.push(event.outcome);
      if (outcomes.length < count) return;
      controller.off('reconciled', listener);
      resolve(outcomes);
    };
    controller.on('reconciled', listener);
  });
}
