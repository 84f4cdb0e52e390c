/**
 * Several fragment keys and two real instances: longest-prefix matching, host/port
 * overrides, moving a claim to another instance, and the deletion policies.
 */
import { randomBytes } from 'node:crypto';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LOGICAL_REPLICATION_SETTINGS, type PostgresCluster, startCluster } from 'hotload-test-support';
import {
  claimYaml,
  configYaml,
  rolesLike,
  tempDir,
  withSecretClient,
  writeMasterPassword,
} from 'hotload-test-support/claims';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DatabaseClaim,
  parseClaims,
  parseReconcilerConfig,
  Reconciler,
  type ReconcilerConfig,
  readStatus,
  statusPath,
} from '../../src/index.js';

let a: PostgresCluster;
let b: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let config: ReconcilerConfig;

beforeAll(async () => {
  // One superuser password for both, so a claim's host/port override can reuse a fragment key's login.
  const superuserPassword = randomBytes(18).toString('base64url');
  // wal_level=logical: an instance change migrates the data by logical replication.
  const settings = LOGICAL_REPLICATION_SETTINGS;
  [a, b] = await Promise.all([
    startCluster({ superuserPassword, settings }),
    startCluster({ superuserPassword, settings }),
  ]);
  work = await tempDir();
  const passwordFile = await writeMasterPassword(work.path, a);
  config = parseReconcilerConfig(
    configYaml({
      atlas: { cluster: a, passwordFile },
      'atlas.recyclebin': { cluster: b, passwordFile },
      athena: { cluster: a, passwordFile },
    }),
    join(work.path, 'config.yaml'),
  );
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await work?.cleanup();
});

function claims(...docs: Array<[string, Record<string, string | number>]>): DatabaseClaim[] {
  const parsed = parseClaims(docs.map(([name, spec]) => claimYaml(name, spec)).join('---\n'), 'claims.yaml');
  expect(parsed.problems).toEqual([]);
  return parsed.claims;
}

async function databaseExists(cluster: PostgresCluster, name: string): Promise<boolean> {
  const { rows } = await cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  return rows.length === 1;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

describe('fragment key matching', () => {
  it('matches the longest fragment key prefix, honours host/port overrides, and reports a label matching none', async () => {
    const out = join(work.path, 'out-match');
    const result = await new Reconciler({ config, outputDir: out }).reconcile(
      claims(
        ['deep', { databaseName: 'deep', instanceLabel: 'atlas.recyclebin.v2', userName: 'deep' }],
        ['shallow', { databaseName: 'shallow', instanceLabel: 'atlas.other', userName: 'shallow' }],
        [
          'override',
          {
            databaseName: 'override',
            instanceLabel: 'atlas',
            userName: 'override',
            host: b.host,
            port: b.port,
          },
        ],
        ['nomatch', { databaseName: 'nomatch', instanceLabel: 'atlasx', userName: 'nomatch' }],
      ),
    );
    const byClaim = Object.fromEntries(result.outcomes.map((o) => [o.claim, o]));
    expect(byClaim['default/deep']).toMatchObject({ result: 'created', matchedLabel: 'atlas.recyclebin' });
    expect(byClaim['default/shallow']).toMatchObject({ result: 'created', matchedLabel: 'atlas' });
    expect(byClaim['default/override']).toMatchObject({ result: 'created', matchedLabel: 'atlas' });
    expect(byClaim['default/nomatch']).toMatchObject({ result: 'error' });

    expect(await databaseExists(b, 'deep')).toBe(true);
    expect(await databaseExists(a, 'deep')).toBe(false);
    expect(await databaseExists(a, 'shallow')).toBe(true);
    expect(await databaseExists(b, 'override')).toBe(true);
    expect(await databaseExists(a, 'override')).toBe(false);
    expect(await readFile(join(out, 'default', 'override', 'port'), 'utf8')).toBe(String(b.port));

    const status = await readStatus(statusPath(out, 'default', 'nomatch'));
    expect(status).toMatchObject({ matchedLabel: null, activeUser: null });
    expect(status?.error).toBe(
      'instanceLabel "atlasx" matches no fragment key (known: atlas, atlas.recyclebin, athena)',
    );
    expect(await exists(join(out, 'default', 'nomatch'))).toBe(false);
    expect(await rolesLike(a, 'nomatch')).toEqual([]);
  });
});

describe('instance change', () => {
  it('provisions on the new instance, migrates the data, republishes there, and drops the old database under Delete', async () => {
    const out = join(work.path, 'out-move');
    const reconciler = new Reconciler({ config, outputDir: out });
    const spec = { databaseName: 'mover', userName: 'mover', deletionPolicy: 'Delete' };
    await reconciler.reconcile(claims(['mover', { ...spec, instanceLabel: 'atlas' }]));
    const dir = join(out, 'default', 'mover');
    await withSecretClient(dir, (client) =>
      client.query('CREATE TABLE on_a (x int PRIMARY KEY); INSERT INTO on_a VALUES (1)'),
    );

    const result = await reconciler.reconcile(
      claims(['mover', { ...spec, instanceLabel: 'atlas.recyclebin' }]),
    );
    expect(result.outcomes).toMatchObject([
      { result: 'moved', matchedLabel: 'atlas.recyclebin', activeUser: 'mover_b' },
    ]);
    expect(await readFile(join(dir, 'port'), 'utf8')).toBe(String(b.port));
    await withSecretClient(dir, (client) => client.query('CREATE TABLE on_b (x int)'));
    // The data came along (online migration; see migration.test.ts).
    expect(
      await withSecretClient(dir, async (client) => (await client.query('SELECT x FROM on_a')).rows),
    ).toEqual([{ x: 1 }]);
    expect(await databaseExists(a, 'mover')).toBe(false);
    expect(await rolesLike(a, 'mover')).toEqual([]);
    expect(await rolesLike(b, 'mover')).toEqual(['mover', 'mover_a', 'mover_b']);
    expect(await readStatus(statusPath(out, 'default', 'mover'))).toMatchObject({
      error: null,
      retired: [],
      binding: { label: 'atlas.recyclebin', port: b.port },
    });
  });

  it('keeps the old database under Orphan', async () => {
    const out = join(work.path, 'out-move-orphan');
    const reconciler = new Reconciler({ config, outputDir: out });
    const spec = { databaseName: 'stayer', userName: 'stayer', deletionPolicy: 'Orphan' };
    await reconciler.reconcile(claims(['stayer', { ...spec, instanceLabel: 'atlas' }]));
    const result = await reconciler.reconcile(
      claims(['stayer', { ...spec, instanceLabel: 'atlas.recyclebin' }]),
    );
    expect(result.outcomes).toMatchObject([{ result: 'moved' }]);
    expect(await databaseExists(a, 'stayer')).toBe(true);
    expect(await databaseExists(b, 'stayer')).toBe(true);
  });
});

describe('deletion', () => {
  it('Delete drops the database and users once no other claim uses the database, and removes the secret', async () => {
    const out = join(work.path, 'out-delete');
    const reconciler = new Reconciler({ config, outputDir: out });
    const first = [
      'gone1',
      { databaseName: 'shared_db', instanceLabel: 'athena', userName: 'gone1', deletionPolicy: 'Delete' },
    ] as const;
    const second = [
      'gone2',
      { databaseName: 'shared_db', instanceLabel: 'athena', userName: 'gone2', deletionPolicy: 'Delete' },
    ] as const;
    await reconciler.reconcile(claims([...first], [...second]));
    // The second claim shares a database it does not own: it still can create tables.
    await withSecretClient(join(out, 'default', 'gone2'), (client) =>
      client.query('CREATE TABLE t2 (x int)'),
    );

    const afterFirst = await reconciler.reconcile(claims([...second]), { prune: true });
    expect(afterFirst.outcomes.find((o) => o.claim === 'default/gone1')).toMatchObject({ result: 'deleted' });
    expect(await databaseExists(a, 'shared_db')).toBe(true); // gone2 still uses it
    expect(await exists(join(out, 'default', 'gone1'))).toBe(false);
    expect(await exists(statusPath(out, 'default', 'gone1'))).toBe(false);

    // A session still connected keeps the drop pending; it completes on a later pass.
    const session = new pg.Client({
      connectionString: await readFile(join(out, 'default', 'gone2', 'uri_dsn.txt'), 'utf8'),
    });
    await session.connect();
    const pending = await reconciler.reconcile([], { prune: true });
    expect(pending.outcomes).toMatchObject([{ claim: 'default/gone2', result: 'deletion-pending' }]);
    expect(await exists(join(out, 'default', 'gone2'))).toBe(false); // secret removed first
    expect((await readStatus(statusPath(out, 'default', 'gone2')))?.error).toMatch(
      /shared_db pending: .*being accessed by other users/,
    );
    await session.end();

    const done = await reconciler.reconcile([], { prune: true });
    expect(done.outcomes).toMatchObject([{ claim: 'default/gone2', result: 'deleted' }]);
    expect(await databaseExists(a, 'shared_db')).toBe(false);
    expect(await rolesLike(a, 'gone')).toEqual(['gone1', 'gone1_a', 'gone1_b']); // kept: shared_db was in use when gone1 left
    expect(await exists(statusPath(out, 'default', 'gone2'))).toBe(false);
  });

  it('Delete leaves a database it did not create (pre-existing, only granted) in place', async () => {
    const out = join(work.path, 'out-legacy');
    const reconciler = new Reconciler({ config, outputDir: out });
    await a.query('CREATE DATABASE legacy');
    const creator = (await a.query('SELECT current_user AS name')).rows[0]?.name;
    const legacy = [
      'legacy',
      { databaseName: 'legacy', instanceLabel: 'athena', userName: 'legacy_app', deletionPolicy: 'Delete' },
    ] as const;
    const created = await reconciler.reconcile(claims([...legacy]));
    expect(created.outcomes).toMatchObject([{ claim: 'default/legacy', result: 'created' }]);
    expect(created.outcomes[0]?.actions).not.toContain('created database legacy');
    // Granted, not owned: the claim's users work in it, the database keeps its owner.
    await withSecretClient(join(out, 'default', 'legacy'), (client) =>
      client.query('CREATE TABLE from_claim (x int)'),
    );
    const owner = async () =>
      (
        await a.query('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1', [
          'legacy',
        ])
      ).rows[0]?.owner;
    expect(await owner()).toBe(creator);

    const gone = await reconciler.reconcile([], { prune: true });
    expect(gone.outcomes).toMatchObject([{ claim: 'default/legacy', result: 'deleted' }]);
    expect(gone.outcomes[0]?.error).toBeUndefined();
    expect(gone.outcomes[0]?.actions).toContain(
      `left database ${a.host}:${a.port}/legacy in place: not created by this reconciler`,
    );
    expect(await databaseExists(a, 'legacy')).toBe(true);
    // The roles hold privileges in the database that stays, so they stay too (named).
    expect(await rolesLike(a, 'legacy_app')).toEqual(['legacy_app', 'legacy_app_a', 'legacy_app_b']);
    expect(gone.outcomes[0]?.actions.some((action) => action.startsWith('left roles legacy_app,'))).toBe(
      true,
    );
    expect(await owner()).toBe(creator);
    expect(await exists(join(out, 'default', 'legacy'))).toBe(false);
    expect(await exists(statusPath(out, 'default', 'legacy'))).toBe(false);
    // Nothing left to do: the next pass is empty.
    expect((await reconciler.reconcile([], { prune: true })).outcomes).toEqual([]);

    // A database the reconciler created itself is still dropped under Delete.
    await reconciler.reconcile(
      claims([
        'own',
        { databaseName: 'own_db', instanceLabel: 'athena', userName: 'own', deletionPolicy: 'Delete' },
      ]),
    );
    expect(await databaseExists(a, 'own_db')).toBe(true);
    const dropped = await reconciler.reconcile([], { prune: true });
    expect(dropped.outcomes).toMatchObject([{ claim: 'default/own', result: 'deleted' }]);
    expect(dropped.outcomes[0]?.actions).toContain(`dropped database ${a.host}:${a.port}/own_db`);
    expect(await databaseExists(a, 'own_db')).toBe(false);
    expect(await rolesLike(a, 'own')).toEqual([]);
  });

  it('Orphan keeps the database and users and removes only the secret', async () => {
    const out = join(work.path, 'out-orphan');
    const reconciler = new Reconciler({ config, outputDir: out });
    await reconciler.reconcile(
      claims(['kept', { databaseName: 'kept', instanceLabel: 'athena', userName: 'kept' }]),
    );
    const result = await reconciler.reconcile([], { prune: true });
    expect(result.outcomes).toMatchObject([{ claim: 'default/kept', result: 'deleted' }]);
    expect(await databaseExists(a, 'kept')).toBe(true);
    expect(await rolesLike(a, 'kept')).toEqual(['kept', 'kept_a', 'kept_b']);
    expect(await exists(join(out, 'default', 'kept'))).toBe(false);
  });

  it('skips deletions when the claim set is incomplete', async () => {
    const out = join(work.path, 'out-incomplete');
    const reconciler = new Reconciler({ config, outputDir: out });
    await reconciler.reconcile(
      claims([
        'maybe',
        { databaseName: 'maybe', instanceLabel: 'athena', userName: 'maybe', deletionPolicy: 'Delete' },
      ]),
    );
    const result = await reconciler.reconcile([], { claimSetComplete: false, prune: true });
    expect(result).toMatchObject({ outcomes: [], deletionsSkipped: true });
    expect(await databaseExists(a, 'maybe')).toBe(true);
    expect(await exists(join(out, 'default', 'maybe', 'password'))).toBe(true);
  });
});
