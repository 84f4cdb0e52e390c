/**
 * The reconciler follows its own rotated credentials: the instance's master password is
 * rotated (ALTER ROLE, then the mounted Secret swapped the kubelet's way) while master
 * connections are in use. Real PostgreSQL, real files, the real watcher; the controller on
 * the REAL control plane under its own RBAC.
 */
import { join } from 'node:path';
import { MasterConnections, parseReconcilerConfig, type ReconcilerConfig } from 'hotload-claim-reconciler';
import { AtomicSecretWriter } from 'hotload-core';
import { describeOnControlPlane, nextEvent, useKubeTestBed, WorkerLoad } from 'hotload-test-support';
import { canLogin, tempDir, useReconcilerCluster } from 'hotload-test-support/claims';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import type { KeyReconciled } from '../src/claim-controller.js';
import { createReadyClaim, makeController, type RunningController, secretData } from './kube-fixtures.js';

/** A second superuser whose password the test rotates (the harness keeps using `postgres`). */
const MASTER = 'rotating_admin';

describeOnControlPlane('a rotated master password', () => {
  const suite = useReconcilerCluster();
  const bed = useKubeTestBed();
  let work: Awaited<ReturnType<typeof tempDir>>;
  let secret: AtomicSecretWriter;
  let config: ReconcilerConfig;
  let generation = 0;
  let running: RunningController | undefined;

  beforeAll(async () => {
    work = await tempDir('master-rotation-');
    secret = new AtomicSecretWriter(join(work.path, 'postgres-master'));
    await suite.cluster.query(`CREATE ROLE ${MASTER} SUPERUSER LOGIN PASSWORD 'first-master-password-1'`);
    await secret.write({ password: 'first-master-password-1' });
    const text = [
      `atlas:`,
      `  host: ${suite.cluster.host}`,
      `  port: ${suite.cluster.port}`,
      `  username: ${MASTER}`,
      `  sslMode: disable`,
      `  passwordFile: ${join(work.path, 'postgres-master', 'password')}`,
      '',
    ].join('\n');
    config = parseReconcilerConfig(text, join(work.path, 'config.yaml'));
  });
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });
  afterAll(async () => {
    await work?.cleanup();
  });

  /** The operator's rotation: the server first, then the Secret the reconciler mounts. */
  async function rotate(): Promise<{ password: string; at: Date }> {
    generation++;
    const password = `rotated-master-password-${generation}`;
    const at = (await suite.cluster.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]!.now;
    await suite.cluster.query(`ALTER ROLE ${MASTER} PASSWORD '${password}'`);
    await secret.write({ password });
    return { password, at };
  }

  async function masterSessionsSince(at: Date): Promise<{ before: number; after: number }> {
    const { rows } = await suite.cluster.query<{ before: string; after: string }>(
      `SELECT count(*) FILTER (WHERE backend_start < $2) AS before, count(*) FILTER (WHERE backend_start >= $2) AS after
         FROM pg_stat_activity WHERE usename = $1`,
      [MASTER, at],
    );
    return { before: Number(rows[0]!.before), after: Number(rows[0]!.after) };
  }

  it('master connections switch under load without a failed statement, and the old ones drain', async () => {
    const connections = new MasterConnections(4);
    const target = {
      label: 'atlas',
      host: suite.cluster.host,
      port: suite.cluster.port,
      fragment: config.fragmentKeys.get('atlas')!,
    };
    const master = await connections.get(target);
    const load = new WorkerLoad(4, () => master.query('SELECT 1'));
    try {
      await load.moreSucceeded(50);
      const switched = nextEvent(master.pool, 'switch');
      const drained = nextEvent(master.pool, 'drained');
      const { at } = await rotate();
      await switched;
      await load.moreSucceeded(50);
      await drained;
      await load.stop();
      expect(load.failures).toEqual([]);
      // No session opened with the old password is left; new ones use the new password.
      expect((await masterSessionsSince(at)).before).toBe(0);
      // Lone clients (a per-database grant, the advisory lock) read the password as it is now.
      expect(
        await master.inDatabase('postgres', async (client) => (await client.query('SELECT 1 AS one')).rows),
      ).toEqual([{ one: 1 }]);
    } finally {
      await load.stop();
      await connections.closeAll();
    }
  });

  it('the controller provisions and rotates claims across a master rotation: 0 failed reconciles', async () => {
    let clock = new Date();
    running = await makeController(bed, { config, now: () => clock }, { namespaces: ['master'] });
    const { controller } = running;
    const failures: KeyReconciled[] = [];
    controller.on('reconciled', (event: KeyReconciled) => {
      if (event.error !== undefined) failures.push(event);
    });
    await controller.start();
    await createReadyClaim(bed.objects, 'master', 'before-rotation');

    const { at } = await rotate();
    // Every session the controller opened with the old password is ended, as an operator
    // retiring a leaked password would: the controller must log in with the new one.
    await suite.cluster.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND backend_start < $2',
      [MASTER, at],
    );
    await createReadyClaim(bed.objects, 'master', 'after-rotation');
    // And a claim rotation (its password set through the master login) goes through too.
    const rotated = nextEvent<KeyReconciled>(
      controller,
      'reconciled',
      (r) => r.key === 'master/before-rotation' && r.outcome === 'rotated',
    );
    clock = new Date(clock.getTime() + 61 * 60_000);
    controller.enqueueAll();
    await rotated;
    const data = secretData(await bed.objects.get('secrets', 'master', 'before-rotation'));
    expect(await canLogin(suite.cluster, data.username!, data.password!, 'before_rotation')).toBe(true);
    expect(failures).toEqual([]);
    expect((await masterSessionsSince(at)).before).toBe(0);
  });
});
