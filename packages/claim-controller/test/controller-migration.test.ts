/**
 * An online move in controller mode (issue 27.2), on the REAL control plane with only the
 * kubelet faked: a claim's `instanceLabel` is edited to another instance while an
 * application on hotload-pg (on the FAKE kubelet's projected folder of the claim's Secret)
 * keeps inserting. The controller runs the same migration engine as the folder mode: its
 * phases in `status.migration`, a `Migrating` Event while it waits, a canary Secret owned by
 * the claim, approval through the claim (`spec.cutoverApproved`), requeues while it runs;
 * the Secret is switched at cutover and the kubelet swaps the files. 0 failed writes, 0 acknowledged
 * writes missing on the target.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseReconcilerConfig } from 'hotload-claim-reconciler';
import { Pool } from 'hotload-pg';
import {
  describeOnControlPlane,
  FakeKubelet,
  type KubeObject,
  LOGICAL_REPLICATION_SETTINGS,
  nextEvent,
  type PostgresCluster,
  useKubeTestBed,
  WorkerLoad,
} from 'hotload-test-support';
import { startReconcilerInstances } from 'hotload-test-support/claims';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLAIM_PLURAL } from '../src/claim-resource.js';
import {
  ALLOW_DELETE,
  createReadyClaim,
  eventsFor,
  makeController,
  nextChange,
  secretData,
} from './kube-fixtures.js';

describeOnControlPlane('an online move in controller mode', () => {
  const bed = useKubeTestBed();
  let source: PostgresCluster;
  let target: PostgresCluster;
  let work: { path: string; cleanup: () => Promise<void> };
  let configText: string;
  let configFile: string;
  let mountDir: string;

  beforeAll(async () => {
    const logical = { settings: LOGICAL_REPLICATION_SETTINGS };
    let clusters: Record<'atlas' | 'atlas.recyclebin', PostgresCluster>;
    ({ clusters, work, configText, configFile } = await startReconcilerInstances({
      atlas: logical,
      'atlas.recyclebin': logical,
    }));
    ({ atlas: source, 'atlas.recyclebin': target } = clusters);
    mountDir = await mkdtemp(join(tmpdir(), 'fake-kubelet-'));
  });
  afterAll(async () => {
    await Promise.all([source?.stop(), target?.stop()]);
    await work?.cleanup();
    await rm(mountDir, { recursive: true, force: true });
  });

  it('moves a claim to another instance under writes: phases in status and Events, 0 failed, 0 missing', async () => {
    const config = parseReconcilerConfig(configText, configFile);
    const { controller, stop } = await makeController(bed, {
      config,
      migration: { drainGraceMillis: 10_000 },
    });
    await controller.start();
    const secretDir = join(mountDir, 'ledger-db');
    let kubelet: FakeKubelet | undefined;
    let pool: Pool | undefined;
    let load: WorkerLoad | undefined;
    try {
      await createReadyClaim(
        bed.objects,
        'moves',
        'ledger',
        { instanceLabel: 'atlas', secretName: 'ledger-db', deletionPolicy: 'Delete', cutover: 'Manual' },
        ALLOW_DELETE,
      );
      kubelet = await FakeKubelet.mount(bed.objects, 'moves', 'ledger-db', secretDir);
      await kubelet.settled();
      pool = new Pool({ max: 4, hotload: { source: { secretDirectory: secretDir } } });
      await pool.query(
        'CREATE TABLE entries (id bigserial PRIMARY KEY, worker int NOT NULL, n int NOT NULL)',
      );
      const activePool = pool;
      const acknowledged: string[] = [];
      load = new WorkerLoad(4, async (worker, n) => {
        await activePool.query('INSERT INTO entries (worker, n) VALUES ($1, $2)', [worker, n]);
        acknowledged.push(`${worker}:${n}`);
      });
      await load.moreSucceeded(50);

      // The move: one field of the claim, with a manual cutover (a canary first).
      type Migration = { phase?: string; canarySecret?: string | null };
      const migrationOf = (object: KubeObject) =>
        (object.status as { migration?: Migration } | undefined)?.migration;
      const canary = nextChange(
        bed.objects,
        (c) =>
          c.plural === CLAIM_PLURAL &&
          c.object.metadata.name === 'ledger' &&
          Boolean(migrationOf(c.object)?.canarySecret),
      );
      await bed.objects.patch(CLAIM_PLURAL, 'moves', 'ledger', {
        spec: { instanceLabel: 'atlas.recyclebin' },
      });
      const waiting = migrationOf((await canary).object);
      expect(waiting?.canarySecret).toBe('ledger-db-canary');
      // The canary Secret is the claim's (garbage-collected with it) and points at the target.
      const canarySecret = await bed.objects.get('secrets', 'moves', 'ledger-db-canary');
      expect(canarySecret?.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'DatabaseClaim', name: 'ledger', controller: true }),
      ]);
      expect(Number(secretData(canarySecret).port)).toBe(target.port);
      const migratingEvents = await eventsFor(bed.objects, 'moves', 'ledger');
      expect(migratingEvents.map((event) => event.reason)).toContain('Migrating');
      await load.moreSucceeded(50);

      // Approval through the claim: the application is switched at cutover.
      const switched = nextEvent(pool, 'switch');
      const done = nextChange(
        bed.objects,
        (c) =>
          c.plural === CLAIM_PLURAL &&
          c.object.metadata.name === 'ledger' &&
          migrationOf(c.object)?.phase === 'done',
      );
      await bed.objects.patch(CLAIM_PLURAL, 'moves', 'ledger', { spec: { cutoverApproved: true } });
      await switched;
      const finished = (await done).object;
      await load.moreSucceeded(50);
      await load.stop();

      expect(load.failures).toEqual([]);
      const status = finished.status as { binding: { label: string; port: number } };
      expect(status.binding).toMatchObject({ label: 'atlas.recyclebin', port: target.port });
      const { rows } = await activePool.query<{ worker: number; n: number }>('SELECT worker, n FROM entries');
      const stored = new Set(rows.map((row) => `${row.worker}:${row.n}`));
      expect(acknowledged.filter((write) => !stored.has(write))).toEqual([]);
      const { rows: on } = await activePool.query<{ port: number }>('SELECT inet_server_port() AS port');
      expect(on[0]?.port).toBe(target.port);
      // The move's own Event; the canary Secret went with the cutover.
      expect((await eventsFor(bed.objects, 'moves', 'ledger')).map((event) => event.reason)).toContain(
        'Moved',
      );
      expect(await bed.objects.get('secrets', 'moves', 'ledger-db-canary')).toBeUndefined();
      // The source database is retired by the Delete policy once the move is done.
      const { rows: left } = await source.query('SELECT 1 FROM pg_database WHERE datname = $1', ['ledger']);
      expect(left).toHaveLength(0);
    } finally {
      await load?.stop();
      await pool?.end();
      await kubelet?.unmount();
      await stop();
    }
  });
});
