/**
 * A claim against a real PostgreSQL: database and users appear, the published secret logs
 * in and can create a table, a re-run changes nothing, and rotations touch only the
 * inactive user's password and the secret.
 */
import { lstat, readFile, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  canLogin,
  claimYaml,
  readSecret,
  rolesLike,
  useReconcilerCluster,
  withSecretClient,
} from 'hotload-test-support/claims';
import * as promClient from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  type ClaimContext,
  folderPorts,
  MasterConnections,
  METRIC_NAMES,
  parseClaims,
  prometheusMetrics,
  Reconciler,
  readStatus,
  reconcileClaim,
  statusPath,
  UsageIndex,
} from '../../src/index.js';

const suite = useReconcilerCluster();

function claim(name: string, spec: Record<string, string | number>) {
  const { claims, problems } = parseClaims(claimYaml(name, spec), `${name}.yaml`);
  expect(problems).toEqual([]);
  return claims;
}

describe('provisioning a claim', () => {
  /**
   * A claim of its own (database, users and output folder named `name`), so that every test
   * runs alone and in any order; `clock` moves forward to trigger rotations.
   */
  function claimSetup(name: string) {
    const out = join(suite.work.path, `out-${name}`);
    let clock = new Date('2030-01-01T00:00:00Z');
    const claims = claim(name, {
      appId: name,
      instanceLabel: 'atlas.orders',
      userName: `${name}_user`,
      dsnName: `${name}.dsn`,
    });
    const secretDir = join(out, 'default', name);
    const reconciler = () => new Reconciler({ config: suite.config, outputDir: out, now: () => clock });
    return {
      out,
      claims,
      secretDir,
      reconciler,
      statusFile: statusPath(out, 'default', name),
      now: () => clock,
      advance(minutes: number) {
        clock = new Date(clock.getTime() + minutes * 60_000);
      },
      /** Reconciles the claim, recording the action of every step it takes. */
      async reconcileRecordingSteps() {
        const steps: string[] = [];
        const result = await new Reconciler({
          config: suite.config,
          outputDir: out,
          now: () => clock,
          onStep: (step) => void steps.push(step.action),
        }).reconcile(claims);
        return { result, steps };
      },
    };
  }

  /** A claim reconciled once, with one row in table t (created through its secret). */
  async function provisioned(name: string) {
    const setup = claimSetup(name);
    const result = await setup.reconciler().reconcile(setup.claims);
    expect(result.outcomes).toMatchObject([{ result: 'created', activeUser: `${name}_user_a` }]);
    await withSecretClient(setup.secretDir, async (client) => {
      await client.query('CREATE TABLE t (id int primary key)');
      await client.query('INSERT INTO t VALUES (1)');
    });
    return setup;
  }

  it('creates the database, a NOLOGIN base role and two login users, and publishes a secret that works', async () => {
    const { claims, reconciler, secretDir, statusFile, now } = claimSetup('orders');
    const result = await reconciler().reconcile(claims);
    expect(result.outcomes).toMatchObject([
      { claim: 'default/orders', result: 'created', activeUser: 'orders_user_a' },
    ]);

    expect(await rolesLike(suite.cluster, 'orders_user')).toEqual([
      'orders_user',
      'orders_user_a',
      'orders_user_b',
    ]);
    const { rows } = await suite.cluster.query<{ rolname: string; rolcanlogin: boolean }>(
      "SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = 'orders_user'",
    );
    expect(rows[0]?.rolcanlogin).toBe(false);
    const db = await suite.cluster.query<{ owner: string }>(
      "SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = 'orders'",
    );
    expect(db.rows[0]?.owner).toBe('orders_user');

    const secret = await readSecret(secretDir);
    expect(secret).toMatchObject({
      hostname: suite.cluster.host,
      port: String(suite.cluster.port),
      database: 'orders',
      username: 'orders_user_a',
      sslmode: 'disable',
    });
    expect(secret.password?.length).toBe(20);
    expect(await readFile(join(secretDir, 'orders.dsn'), 'utf8')).toBe(secret['dsn.txt']);
    expect(await readFile(join(secretDir, 'uri_orders.dsn'), 'utf8')).toBe(secret['uri_dsn.txt']);
    expect((await stat(join(secretDir, 'password'))).mode & 0o777).toBe(0o600);
    expect((await lstat(join(secretDir, 'password'))).isSymbolicLink()).toBe(true);

    await withSecretClient(secretDir, async (client) => {
      await client.query('CREATE TABLE t (id int primary key)');
      await client.query('INSERT INTO t VALUES (1)');
      const { rows: count } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM t');
      expect(count[0]?.n).toBe(1);
    });

    const status = await readStatus(statusFile);
    expect(status).toMatchObject({
      error: null,
      matchedLabel: 'atlas',
      activeUser: 'orders_user_a',
      dbCreatedAt: now().toISOString(),
      connectionInfoUpdatedAt: now().toISOString(),
      userUpdatedAt: now().toISOString(),
    });
    expect(JSON.stringify(status)).not.toContain(secret.password);
  });

  it('changes nothing when run again: same roles, same secret, same status', async () => {
    const setup = await provisioned('again');
    const roles = await rolesLike(suite.cluster, 'again_user');
    const dataDir = await readlink(join(setup.secretDir, '..data'));
    const statusText = await readFile(setup.statusFile, 'utf8');
    setup.advance(59); // inside the 60-minute period

    const { result, steps } = await setup.reconcileRecordingSteps();

    expect(result.outcomes).toMatchObject([{ result: 'unchanged', actions: [] }]);
    expect(steps).toEqual([]);
    expect(await rolesLike(suite.cluster, 'again_user')).toEqual(roles);
    expect(await readlink(join(setup.secretDir, '..data'))).toBe(dataDir);
    expect(await readFile(setup.statusFile, 'utf8')).toBe(statusText);
  });

  it('rotates after the period: only the inactive user gets a new password, the previous one keeps working', async () => {
    const setup = await provisioned('aging');
    const before = await readSecret(setup.secretDir);
    setup.advance(61); // 61 minutes after the first publish
    const { result, steps } = await setup.reconcileRecordingSteps();

    expect(result.outcomes).toMatchObject([{ result: 'rotated', activeUser: 'aging_user_b' }]);
    expect(steps).toEqual([
      'set-password aging_user_b',
      'publish-secret',
      'publish-secret:write-files',
      'publish-secret:swap-data',
      'publish-secret:remove-old',
      'write-status',
      'rename-status',
    ]);
    const after = await readSecret(setup.secretDir);
    expect(after.username).toBe('aging_user_b');
    expect(after.password).not.toBe(before.password);
    expect(await canLogin(suite.cluster, 'aging_user_a', before.password!, 'aging')).toBe(true);
    await withSecretClient(setup.secretDir, async (client) => {
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM t');
      expect(rows[0]?.n).toBe(1); // same data through the base role's privileges
    });
    expect(await readStatus(setup.statusFile)).toMatchObject({
      activeUser: 'aging_user_b',
      userUpdatedAt: setup.now().toISOString(),
    });
  });

  it('rotates on demand to the other user and back, leaving the previous one valid each time', async () => {
    const setup = await provisioned('ondemand');
    for (const [from, to] of [
      ['ondemand_user_a', 'ondemand_user_b'],
      ['ondemand_user_b', 'ondemand_user_a'],
    ] as const) {
      const before = await readSecret(setup.secretDir);
      const result = await setup.reconciler().reconcile(setup.claims, { rotate: true });
      expect(result.outcomes).toMatchObject([{ result: 'rotated', activeUser: to }]);
      const after = await readSecret(setup.secretDir);
      expect(after.username).toBe(to);
      expect(await canLogin(suite.cluster, from, before.password!, 'ondemand')).toBe(true);
      expect(await canLogin(suite.cluster, to, after.password!, 'ondemand')).toBe(true);
    }
  });

  it('repairs a secret whose password no longer logs in, by rotating to the other user', async () => {
    const setup = await provisioned('repair');
    await suite.cluster.query("ALTER ROLE repair_user_a PASSWORD 'changed-behind-our-back'");
    const result = await setup.reconciler().reconcile(setup.claims);
    expect(result.outcomes).toMatchObject([{ result: 'repaired', activeUser: 'repair_user_b' }]);
    await withSecretClient(setup.secretDir, (client) => client.query('SELECT 1'));
  });
});

describe('metrics', () => {
  it('counts users created, rotations and provisioning errors under the design’s metric names', async () => {
    const registry = new promClient.Registry();
    const reconciler = new Reconciler({
      config: suite.config,
      outputDir: join(suite.work.path, 'out-metrics'),
      metrics: prometheusMetrics(promClient, registry),
    });
    await reconciler.reconcile(
      claim('metered', { databaseName: 'metered', instanceLabel: 'atlas', userName: 'metered' }),
    );
    await reconciler.reconcile(
      claim('metered', { databaseName: 'metered', instanceLabel: 'atlas', userName: 'metered' }),
      { rotate: true },
    );
    await reconciler.reconcile(
      claim('broken', { databaseName: 'broken', instanceLabel: 'nowhere', userName: 'broken' }),
    );
    const value = async (name: string) => (await registry.getSingleMetric(name)?.get())?.values[0]?.value;
    expect(await value(METRIC_NAMES.usersCreated)).toBe(2);
    expect(await value(METRIC_NAMES.passwordsRotated)).toBe(2); // first password + one rotation
    expect(await value(METRIC_NAMES.claimsLoaded)).toBe(3);
    expect(await value(METRIC_NAMES.provisioningErrors)).toBe(0); // a label matching nothing is a claim error, not SQL
  });
});

describe('reconcileClaim, the per-claim entry for other drivers', () => {
  it('returns when to come back and keeps errors as values (retryable or terminal)', async () => {
    const outputDir = join(suite.work.path, 'out-driver');
    const connections = new MasterConnections();
    const context: ClaimContext = {
      config: suite.config,
      connections,
      usage: new UsageIndex(),
      ports: folderPorts(outputDir),
      now: new Date('2030-01-01T00:00:00Z'),
      publisher: await folderPorts(outputDir).publisherId(undefined),
    };
    try {
      const [good] = claim('driven', { databaseName: 'driven', instanceLabel: 'atlas', userName: 'driven' });
      const created = await reconcileClaim(context, good!, false);
      expect(created).toEqual({
        outcome: expect.objectContaining({ claim: 'default/driven', result: 'created' }),
        requeueAfterMillis: 60 * 60_000, // the rotation period of the suite's config
      });
      const later = await reconcileClaim({ ...context, now: new Date('2030-01-01T00:45:00Z') }, good!, false);
      expect(later).toMatchObject({ outcome: { result: 'unchanged' }, requeueAfterMillis: 15 * 60_000 });

      const [lost] = claim('lost-driven', {
        databaseName: 'lost',
        instanceLabel: 'nowhere',
        userName: 'lost',
      });
      const failed = await reconcileClaim(context, lost!, false);
      expect(failed.error).toEqual({
        kind: 'terminal',
        message: 'instanceLabel "nowhere" matches no fragment key (known: atlas)',
      });
      expect(failed.requeueAfterMillis).toBeUndefined();
    } finally {
      await connections.closeAll();
    }
  });
});
