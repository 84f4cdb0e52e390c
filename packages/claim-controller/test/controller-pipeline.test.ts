/**
 * The whole cluster pipeline on the REAL control plane, with only the kubelet faked:
 * DatabaseClaim resource → controller (under its own RBAC) → Secret → FAKE kubelet
 * projecting it into a folder (atomic `..data` swap) → hotload-pg pool → queries. Under
 * steady load, a rotation and then the claim's deletion (policy Orphan) fail no query.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'hotload-pg';
import {
  describeOnControlPlane,
  FakeKubelet,
  nextEvent,
  useKubeTestBed,
  WorkerLoad,
} from 'hotload-test-support';
import { useReconcilerCluster } from 'hotload-test-support/claims';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLAIM_PLURAL } from '../src/claim-resource.js';
import { createReadyClaim, deletion, makeController, secretData } from './kube-fixtures.js';

describeOnControlPlane('claim resource → controller → Secret → kubelet → hotload-pg', () => {
  const suite = useReconcilerCluster();
  const bed = useKubeTestBed();
  let mountDir: string;

  beforeAll(async () => {
    mountDir = await mkdtemp(join(tmpdir(), 'fake-kubelet-'));
  });
  afterAll(async () => {
    await rm(mountDir, { recursive: true, force: true });
  });

  it('serves every query through a rotation and the claim deletion', async () => {
    let clock = new Date();
    const { controller, stop } = await makeController(bed, { config: suite.config, now: () => clock });
    await controller.start();
    const secretDir = join(mountDir, 'notes-db');
    let kubelet: FakeKubelet | undefined;
    let pool: Pool | undefined;
    let load: WorkerLoad | undefined;
    try {
      await createReadyClaim(bed.objects, 'notes', 'notes', { secretName: 'notes-db' });
      kubelet = await FakeKubelet.mount(bed.objects, 'notes', 'notes-db', secretDir);
      await kubelet.settled();

      pool = new Pool({ max: 4, hotload: { source: { secretDirectory: secretDir } } });
      await pool.ready();
      const activePool = pool;
      load = new WorkerLoad(4, () => activePool.query('SELECT session_user AS user'));
      await load.moreSucceeded(50);

      // Rotation: the controller updates the Secret in place, the kubelet swaps the files.
      const switched = nextEvent(pool, 'switch');
      clock = new Date(clock.getTime() + 61 * 60_000);
      controller.enqueueAll();
      await switched;
      expect(secretData(await bed.objects.get('secrets', 'notes', 'notes-db')).username).toBe('notes_b');
      const { rows } = await pool.query<{ user: string }>('SELECT session_user AS user');
      expect(rows[0]?.user).toBe('notes_b');
      await load.moreSucceeded(50);

      // Deletion (Orphan): claim and Secret go; the kubelet keeps the last files, the users stay.
      const gone = deletion(bed.objects, CLAIM_PLURAL, 'notes');
      await bed.objects.delete(CLAIM_PLURAL, 'notes', 'notes');
      await gone;
      expect(await bed.objects.get('secrets', 'notes', 'notes-db')).toBeUndefined();
      await load.moreSucceeded(50);

      await load.stop();
      expect(load.failures).toEqual([]);
      expect(load.succeeded).toBeGreaterThanOrEqual(150);
    } finally {
      await load?.stop();
      await pool?.end();
      await kubelet?.unmount();
      await stop();
    }
  });
});
