/**
 * A claim against a real PostgreSQL: database and users appear, the published secret logs
 * in and can create a table, a re-run changes nothing, and rotations touch only the
 * inactive user's password and the secret.
 */
import { lstat, readFile, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import * as promClient from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  METRIC_NAMES,
  parseClaims,
  prometheusMetrics,
  Reconciler,
  readStatus,
  statusPath,
} from '../src/index.js';
import {
  canLogin,
  claimYaml,
  readSecret,
  rolesLike,
  useReconcilerCluster,
  withSecretClient,
} from './fixtures.js';

const suite = useReconcilerCluster();

function claim(name: string, spec: Record<string, string | number>) {
  const { claims, problems } = parseClaims(claimYaml(name, spec), `${name}.yaml`);
  expect(problems).toEqual([]);
  return claims;
}

describe('provisioning a claim', () => {
  const out = () => join(suite.work.path, 'out-provision');
  let clock = new Date('2030-01-01T00:00:00Z');
  const reconciler = () => new Reconciler({ config: suite.config, outputDir: out(), now: () => clock });
  const claims = () =>
    claim('orders', {
      appId: 'orders',
      instanceLabel: 'atlas.orders',
      userName: 'orders_user',
      dsnName: 'orders.dsn',
    });
  const secretDir = () => join(out(), 'default', 'orders');

  /** Reconciles the claim, recording the action of every step it takes. */
  async function reconcileRecordingSteps() {
    const steps: string[] = [];
    const result = await new Reconciler({
      config: suite.config,
      outputDir: out(),
      now: () => clock,
      onStep: (s) => void steps.push(s.action),
    }).reconcile(claims());
    return { result, steps };
  }

  it('creates the database, a NOLOGIN base role and two login users, and publishes a secret that works', async () => {
    const result = await reconciler().reconcile(claims());
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

    const secret = await readSecret(secretDir());
    expect(secret).toMatchObject({
      hostname: suite.cluster.host,
      port: String(suite.cluster.port),
      database: 'orders',
      username: 'orders_user_a',
      sslmode: 'disable',
    });
    expect(secret.password?.length).toBe(20);
    expect(await readFile(join(secretDir(), 'orders.dsn'), 'utf8')).toBe(secret['dsn.txt']);
    expect(await readFile(join(secretDir(), 'uri_orders.dsn'), 'utf8')).toBe(secret['uri_dsn.txt']);
    expect((await stat(join(secretDir(), 'password'))).mode & 0o777).toBe(0o600);
    expect((await lstat(join(secretDir(), 'password'))).isSymbolicLink()).toBe(true);

    await withSecretClient(secretDir(), async (client) => {
      await client.query('CREATE TABLE t (id int primary key)');
      await client.query('INSERT INTO t VALUES (1)');
      const { rows: count } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM t');
      expect(count[0]?.n).toBe(1);
    });

    const status = await readStatus(statusPath(out(), 'default', 'orders'));
    expect(status).toMatchObject({
      error: null,
      matchedLabel: 'atlas',
      activeUser: 'orders_user_a',
      dbCreatedAt: clock.toISOString(),
      connectionInfoUpdatedAt: clock.toISOString(),
      userUpdatedAt: clock.toISOString(),
    });
    expect(JSON.stringify(status)).not.toContain(secret.password);
  });

  it('changes nothing when run again: same roles, same secret, same status', async () => {
    const roles = await rolesLike(suite.cluster, 'orders_user');
    const dataDir = await readlink(join(secretDir(), '..data'));
    const statusText = await readFile(statusPath(out(), 'default', 'orders'), 'utf8');
    clock = new Date(clock.getTime() + 59 * 60_000); // inside the 60-minute period

    const { result, steps } = await reconcileRecordingSteps();

    expect(result.outcomes).toMatchObject([{ result: 'unchanged', actions: [] }]);
    expect(steps).toEqual([]);
    expect(await rolesLike(suite.cluster, 'orders_user')).toEqual(roles);
    expect(await readlink(join(secretDir(), '..data'))).toBe(dataDir);
    expect(await readFile(statusPath(out(), 'default', 'orders'), 'utf8')).toBe(statusText);
  });

  it('rotates after the period: only the inactive user gets a new password, the previous one keeps working', async () => {
    const before = await readSecret(secretDir());
    clock = new Date(clock.getTime() + 2 * 60_000); // 61 minutes after the first publish
    const { result, steps } = await reconcileRecordingSteps();

    expect(result.outcomes).toMatchObject([{ result: 'rotated', activeUser: 'orders_user_b' }]);
    expect(steps).toEqual([
      'set-password orders_user_b',
      'publish-secret',
      'publish-secret:write-files',
      'publish-secret:swap-data',
      'publish-secret:remove-old',
      'write-status',
      'rename-status',
    ]);
    const after = await readSecret(secretDir());
    expect(after.username).toBe('orders_user_b');
    expect(after.password).not.toBe(before.password);
    expect(await canLogin(suite.cluster, 'orders_user_a', before.password!, 'orders')).toBe(true);
    await withSecretClient(secretDir(), async (client) => {
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM t');
      expect(rows[0]?.n).toBe(1); // same data through the base role's privileges
    });
    expect(await readStatus(statusPath(out(), 'default', 'orders'))).toMatchObject({
      activeUser: 'orders_user_b',
      userUpdatedAt: clock.toISOString(),
    });
  });

  it('rotates on demand back to the first user, leaving the second one valid', async () => {
    const before = await readSecret(secretDir());
    const result = await reconciler().reconcile(claims(), { rotate: true });
    expect(result.outcomes).toMatchObject([{ result: 'rotated', activeUser: 'orders_user_a' }]);
    const after = await readSecret(secretDir());
    expect(after.username).toBe('orders_user_a');
    expect(await canLogin(suite.cluster, 'orders_user_b', before.password!, 'orders')).toBe(true);
    expect(await canLogin(suite.cluster, 'orders_user_a', after.password!, 'orders')).toBe(true);
  });

  it('repairs a secret whose password no longer logs in, by rotating to the other user', async () => {
    await suite.cluster.query("ALTER ROLE orders_user_a PASSWORD 'changed-behind-our-back'");
    const result = await reconciler().reconcile(claims());
    expect(result.outcomes).toMatchObject([{ result: 'repaired', activeUser: 'orders_user_b' }]);
    await withSecretClient(secretDir(), (client) => client.query('SELECT 1'));
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
