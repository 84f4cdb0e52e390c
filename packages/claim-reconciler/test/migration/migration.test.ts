/**
 * Instance changes move the data: the reconciler migrates a claim's database online
 * (schema copy, logical replication, cutover, drain) between two real clusters with
 * wal_level=logical, while a hotload-pg pool on the published secret keeps writing.
 */
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Pool } from 'hotload-pg';
import { LOGICAL_REPLICATION_SETTINGS, type PostgresCluster, WorkerLoad } from 'hotload-test-support';
import {
  claimYaml,
  replicationLeftovers,
  startReconcilerInstances,
  withSecretClient,
} from 'hotload-test-support/claims';
import pg from 'pg';
import * as promClient from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseClaim, ReconcilerConfig } from '../../src/index.js';
import {
  parseClaims,
  parseReconcilerConfig,
  prometheusMetrics,
  Reconciler,
  readStatus,
  statusPath,
} from '../../src/index.js';
import { runCli, startCli } from '../folder/cli-runner.js';

let a: PostgresCluster;
let b: PostgresCluster;
let plain: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let config: ReconcilerConfig;
let configFile: string;

beforeAll(async () => {
  const logical = { settings: LOGICAL_REPLICATION_SETTINGS };
  let clusters: Record<'atlas' | 'atlas.recyclebin' | 'legacy', PostgresCluster>;
  let configText: string;
  ({ clusters, work, configFile, configText } = await startReconcilerInstances({
    atlas: logical,
    'atlas.recyclebin': logical,
    legacy: {},
  }));
  ({ atlas: a, 'atlas.recyclebin': b, legacy: plain } = clusters);
  config = parseReconcilerConfig(configText, configFile);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), plain?.stop()]);
  await work?.cleanup();
});

function claims(name: string, spec: Record<string, string | number | boolean>): DatabaseClaim[] {
  const text = claimYaml(name, {
    databaseName: name.replace(/-/g, '_'),
    userName: name.replace(/-/g, '_'),
    ...spec,
  } as Record<string, string | number>);
  const parsed = parseClaims(text, 'claims.yaml');
  expect(parsed.problems).toEqual([]);
  return parsed.claims;
}

function reconciler(out: string): Reconciler {
  return new Reconciler({ config, outputDir: out, migration: { drainGraceMillis: 10_000 } });
}

/** A `cutover: Manual` claim named `name`, provisioned on the source, with `schema` run through its secret. */
async function canaryClaimOnSource(name: string, schema: string) {
  const out = join(work.path, `out-${name}`);
  const r = reconciler(out);
  const dir = join(out, 'default', name);
  const base = { deletionPolicy: 'Delete', cutover: 'Manual' };
  await r.reconcile(claims(name, { ...base, instanceLabel: 'atlas' }));
  await withSecretClient(dir, (c) => c.query(schema));
  return { out, r, dir, base };
}

async function port(dir: string): Promise<number> {
  return Number(await readFile(join(dir, 'port'), 'utf8'));
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

async function databaseExists(cluster: PostgresCluster, name: string): Promise<boolean> {
  return (await cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rows.length === 1;
}

/** Replication objects left on the source (a) and the target (b) by a move or seed of `database`. */
const leftovers = (database: string) => replicationLeftovers(a, b, database);

const SCHEMA = `
  CREATE TYPE kind AS ENUM ('plain', 'urgent');
  CREATE TABLE owners (id serial PRIMARY KEY, name text NOT NULL UNIQUE, kind kind NOT NULL DEFAULT 'plain');
  CREATE TABLE items (
    id bigserial PRIMARY KEY,
    owner int NOT NULL REFERENCES owners (id),
    worker int NOT NULL,
    v int NOT NULL,
    kind kind NOT NULL
  );
  INSERT INTO owners (name, kind) VALUES ('w0', 'urgent'), ('w1', 'plain'), ('w2', 'urgent'), ('w3', 'plain');
  INSERT INTO items (owner, worker, v, kind) SELECT 1 + g % 4, -1, g, 'plain' FROM generate_series(1, 5000) g;`;

describe('instance change with online migration', () => {
  it('moves under insert/update/delete load: every acknowledged write is on the target, sequences continue', async () => {
    const out = join(work.path, 'out-load');
    const r = reconciler(out);
    const dir = join(out, 'default', 'mover');
    await r.reconcile(claims('mover', { instanceLabel: 'atlas', deletionPolicy: 'Delete' }));
    await withSecretClient(dir, (c) => c.query(SCHEMA));

    const pool = new Pool({
      max: 8,
      hotload: { source: { secretDirectory: dir }, drainTimeoutMillis: 5_000 },
    });
    const inserted = new Set<string>();
    const duplicates: string[] = [];
    const deleted = new Set<string>();
    const lastValue = new Map<string, number>();
    const own: string[][] = [[], [], [], []];
    const load = new WorkerLoad(4, async (worker, n) => {
      const mine = own[worker]!;
      if (n % 5 === 3 && mine.length > 0) {
        const id = mine[n % mine.length]!;
        await pool.query('UPDATE items SET v = $2 WHERE id = $1', [id, n]);
        lastValue.set(id, n);
      } else if (n % 5 === 4 && mine.length > 2) {
        const id = mine.shift()!;
        await pool.query('DELETE FROM items WHERE id = $1', [id]);
        deleted.add(id);
        lastValue.delete(id);
      } else {
        const { rows } = await pool.query<{ id: string }>(
          `INSERT INTO items (owner, worker, v, kind) VALUES ($1, $1 - 1, $2, 'urgent') RETURNING id::text`,
          [worker + 1, n],
        );
        const id = rows[0]!.id;
        if (inserted.has(id)) duplicates.push(id);
        inserted.add(id);
        mine.push(id);
        lastValue.set(id, n);
      }
    });
    try {
      await load.moreSucceeded(300);
      const moved = await r.reconcile(
        claims('mover', { instanceLabel: 'atlas.recyclebin', deletionPolicy: 'Delete' }),
      );
      expect(moved.outcomes).toMatchObject([
        { result: 'moved', matchedLabel: 'atlas.recyclebin', activeUser: 'mover_b' },
      ]);
      expect(await port(dir)).toBe(b.port);
      await load.moreSucceeded(300); // writes now land on the target
    } finally {
      await load.stop();
      await pool.end();
    }
    expect(load.failures).toEqual([]);
    expect(duplicates).toEqual([]);

    const target = new pg.Client(b.connectionConfig({ database: 'mover' }));
    await target.connect();
    try {
      const { rows } = await target.query<{ id: string; v: number }>(
        'SELECT id::text, v FROM items WHERE worker >= 0',
      );
      const onTarget = new Map(rows.map((row) => [row.id, row.v]));
      const missing = [...inserted].filter((id) => !deleted.has(id) && !onTarget.has(id));
      const resurrected = [...deleted].filter((id) => onTarget.has(id));
      const staleUpdates = [...lastValue].filter(([id, v]) => onTarget.get(id) !== v);
      expect({ missing, resurrected, staleUpdates }).toEqual({
        missing: [],
        resurrected: [],
        staleUpdates: [],
      });
      expect(rows.length).toBe(inserted.size - deleted.size);
      expect((await target.query('SELECT count(*)::int AS n FROM items WHERE worker = -1')).rows).toEqual([
        { n: 5000 },
      ]);
      // The sequence continues above every id ever handed out.
      const maxId = [...inserted].reduce((max, id) => (BigInt(id) > max ? BigInt(id) : max), 0n);
      const next = await target.query<{ id: string }>(
        `INSERT INTO items (owner, worker, v, kind) VALUES (1, 9, 0, 'plain') RETURNING id::text`,
      );
      expect(BigInt(next.rows[0]!.id)).toBeGreaterThan(maxId);
      // The FK and the enum came along.
      await expect(
        target.query(`INSERT INTO items (owner, worker, v, kind) VALUES (99, 9, 0, 'plain')`),
      ).rejects.toMatchObject({ code: '23503' });
      await expect(
        target.query(`INSERT INTO items (owner, worker, v, kind) VALUES (1, 9, 0, 'meh')`),
      ).rejects.toMatchObject({ code: '22P02' });
    } finally {
      await target.end();
    }

    const status = await readStatus(statusPath(out, 'default', 'mover'));
    expect(status).toMatchObject({
      error: null,
      retired: [],
      binding: { label: 'atlas.recyclebin', port: b.port },
      migration: {
        phase: 'done',
        rowsCopied: expect.any(Number),
        lagBytes: 0,
        error: null,
        synchronousApply: 'held',
      },
    });
    expect(status?.migration?.rowsCopied).toBeGreaterThanOrEqual(5004);
    expect(await databaseExists(a, 'mover')).toBe(false); // retired under Delete
    expect(await leftovers('mover')).toEqual({ slots: 0, logins: 0, publications: 0, subscriptions: 0 });

    // The next pass is an ordinary one.
    const again = await r.reconcile(
      claims('mover', { instanceLabel: 'atlas.recyclebin', deletionPolicy: 'Delete' }),
    );
    expect(again.outcomes).toMatchObject([{ result: 'unchanged' }]);
  });

  it('refuses a dbName change within one instance: the claim stays on its database, no replication is left', async () => {
    // The two databases would share the claim's login roles, which a move locks and retires
    // on its source; before the refusal the move hung in CREATE SUBSCRIPTION (a
    // subscription cannot create its slot on its own server).
    const out = join(work.path, 'out-rename');
    const r = reconciler(out);
    const dir = join(out, 'default', 'renamer');
    const spec = { instanceLabel: 'atlas', deletionPolicy: 'Delete' };
    await r.reconcile(claims('renamer', { ...spec, databaseName: 'renamer_one' }));
    await withSecretClient(dir, (c) =>
      c.query('CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 1000)'),
    );
    const refused = await r.reconcile(claims('renamer', { ...spec, databaseName: 'renamer_two' }));
    expect(refused.outcomes).toMatchObject([{ result: 'error' }]);
    expect(refused.outcomes[0]!.error).toMatch(
      /^moving database renamer_one to renamer_two on the same instance .* is not supported: .*share the claim's login roles/,
    );
    expect(await readFile(join(dir, 'database'), 'utf8')).toBe('renamer_one');
    const rows = await withSecretClient(dir, (c) => c.query('SELECT count(*)::int AS n FROM t'));
    expect(rows.rows).toEqual([{ n: 1000 }]);
    expect(await leftovers('renamer_one')).toMatchObject({ slots: 0, logins: 0, publications: 0 });
    // The pass provisions the claim's database before it looks at a move, so renamer_two
    // exists, empty: the refusal leaves it, as a refused move leaves its target.
    expect(await databaseExists(a, 'renamer_two')).toBe(true);
    // Set back, the claim is an ordinary one again.
    const back = await r.reconcile(claims('renamer', { ...spec, databaseName: 'renamer_one' }));
    expect(back.outcomes[0]).toMatchObject({ result: 'updated' }); // the status loses its error
    expect(back.outcomes[0]!.error).toBeUndefined();
  });

  it('refuses a database holding unsupported objects: the claim stays on the source, the status says why', async () => {
    const out = join(work.path, 'out-refuse');
    const r = reconciler(out);
    const dir = join(out, 'default', 'refuser');
    await r.reconcile(claims('refuser', { instanceLabel: 'atlas', deletionPolicy: 'Delete' }));
    await withSecretClient(dir, (c) =>
      c.query(`CREATE TABLE t (id int PRIMARY KEY, at timestamptz);
        CREATE FUNCTION stamp() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.at := now(); RETURN NEW; END $$;
        CREATE TRIGGER t_stamp BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION stamp();
        INSERT INTO t (id) VALUES (1);`),
    );
    const result = await r.reconcile(
      claims('refuser', { instanceLabel: 'atlas.recyclebin', deletionPolicy: 'Delete' }),
    );
    expect(result.outcomes).toMatchObject([{ result: 'error' }]);
    const error = result.outcomes[0]!.error!;
    expect(error).toContain('function public.stamp (functions and procedures are not copied)');
    expect(error).toContain('trigger t_stamp on t (triggers are not copied)');
    expect(await port(dir)).toBe(a.port);
    expect(
      await withSecretClient(dir, async (c) => (await c.query('SELECT count(*)::int AS n FROM t')).rows),
    ).toEqual([{ n: 1 }]);
    const status = await readStatus(statusPath(out, 'default', 'refuser'));
    expect(status).toMatchObject({ binding: { port: a.port }, migration: { phase: 'schema' } });
    expect(status?.error).toContain('function public.stamp');
    expect(await leftovers('refuser')).toEqual({ slots: 0, logins: 0, publications: 0, subscriptions: 0 });

    // The CLI's exit code says it failed.
    const claimsDir = join(work.path, 'claims-refuser');
    await mkdir(claimsDir, { recursive: true });
    await writeFile(
      join(claimsDir, 'claim.yaml'),
      claimYaml('refuser', {
        databaseName: 'refuser',
        userName: 'refuser',
        instanceLabel: 'atlas.recyclebin',
        deletionPolicy: 'Delete',
      }),
    );
    const cli = await runCli(['reconcile', '--config', configFile, '--claims', claimsDir, '--out', out]);
    expect(cli.code).toBe(1);
    expect(cli.stdout).toContain('trigger t_stamp on t (triggers are not copied)');
    expect(await port(dir)).toBe(a.port);
  });

  it('names wal_level when the source cannot publish, and leaves the claim where it is', async () => {
    const out = join(work.path, 'out-nowal');
    const r = reconciler(out);
    const dir = join(out, 'default', 'oldie');
    await r.reconcile(claims('oldie', { instanceLabel: 'legacy', deletionPolicy: 'Delete' }));
    await withSecretClient(dir, (c) => c.query('CREATE TABLE t (id int PRIMARY KEY)'));
    const result = await r.reconcile(
      claims('oldie', { instanceLabel: 'atlas.recyclebin', deletionPolicy: 'Delete' }),
    );
    expect(result.outcomes[0]).toMatchObject({ result: 'error' });
    expect(result.outcomes[0]!.error).toContain(
      `source instance ${plain.host}:${plain.port} has wal_level=replica; an online migration needs wal_level=logical`,
    );
    expect(await port(dir)).toBe(plain.port);
  });

  it('canary: replicates, publishes <secret>-canary, cuts over only when approved', async () => {
    const { out, dir, base } = await canaryClaimOnSource(
      'bird',
      "CREATE TABLE notes (id serial PRIMARY KEY, body text); INSERT INTO notes (body) VALUES ('one')",
    );
    const canaryDir = join(out, 'default', 'bird-canary');
    const registry = new promClient.Registry();
    const r = new Reconciler({ config, outputDir: out, metrics: prometheusMetrics(promClient, registry) });
    const metric = async (name: string) =>
      ((await registry.getSingleMetric(name)?.get())?.values ?? []).map((v) => [
        v.labels.claim ?? '',
        v.value,
      ]);

    const waiting = await r.reconcile(claims('bird', { ...base, instanceLabel: 'atlas.recyclebin' }));
    expect(waiting.outcomes).toMatchObject([{ result: 'migrating' }]);
    expect(await port(dir)).toBe(a.port);
    expect(await port(canaryDir)).toBe(b.port);
    expect((await readStatus(statusPath(out, 'default', 'bird')))?.migration).toMatchObject({
      phase: 'streaming',
      canarySecret: 'bird-canary',
    });
    // Writes on the source reach the canary's target while the claim waits.
    await withSecretClient(dir, (c) => c.query(`INSERT INTO notes (body) VALUES ('two')`));
    await withSecretClient(canaryDir, async (c) => {
      while ((await c.query(`SELECT 1 FROM notes WHERE body = 'two'`)).rows.length === 0) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    // Another pass without approval keeps waiting.
    expect(
      (await r.reconcile(claims('bird', { ...base, instanceLabel: 'atlas.recyclebin' }))).outcomes,
    ).toMatchObject([{ result: 'migrating' }]);

    const approved = await r.reconcile(
      claims('bird', { ...base, instanceLabel: 'atlas.recyclebin', cutoverApproved: true }),
    );
    expect(approved.outcomes).toMatchObject([{ result: 'moved' }]);
    expect(await port(dir)).toBe(b.port);
    expect(await exists(canaryDir)).toBe(false);
    expect(
      await withSecretClient(dir, async (c) => (await c.query('SELECT body FROM notes ORDER BY id')).rows),
    ).toEqual([{ body: 'one' }, { body: 'two' }]);
    expect(await metric('dbclaim_migrations_started_total')).toEqual([['', 1]]);
    expect(await metric('dbclaim_migrations_completed_total')).toEqual([['', 1]]);
    expect(await metric('dbclaim_migrations_failed_total')).toEqual([['', 0]]);
    expect(await metric('dbclaim_migration_lag_bytes')).toEqual([['default/bird', 0]]);
  });

  it('--watch comes back by itself while a migration waits, without a claim change or a resync', async () => {
    const claimsDir = join(work.path, 'claims-watched-move');
    const out = join(work.path, 'out-watched-move');
    await mkdir(claimsDir, { recursive: true });
    const claimFile = join(claimsDir, 'claim.yaml');
    const spec = (instanceLabel: string) =>
      claimYaml('heron', {
        databaseName: 'heron',
        userName: 'heron',
        deletionPolicy: 'Delete',
        instanceLabel,
      });
    await writeFile(claimFile, spec('atlas'));
    // A resync an hour away: any pass after the move's first comes from its requeue.
    const child = startCli(
      [
        'reconcile',
        '--watch',
        '--json',
        '--resync-seconds',
        '3600',
        '--config',
        configFile,
        '--claims',
        claimsDir,
        '--out',
        out,
      ],
      { stderr: 'inherit' },
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const nextPass = async () => {
        const { outcomes } = JSON.parse((await lines.next()).value as string) as {
          outcomes: Array<{ result: string }>;
        };
        return outcomes.map((o) => o.result);
      };
      expect(await nextPass()).toEqual(['created']);
      await withSecretClient(join(out, 'default', 'heron'), (c) =>
        c.query('CREATE TABLE t (id int PRIMARY KEY)'),
      );
      // A canary move waits for approval: each pass reports it migrating and asks to come back.
      await writeFile(
        claimFile,
        claimYaml('heron', {
          databaseName: 'heron',
          userName: 'heron',
          deletionPolicy: 'Delete',
          instanceLabel: 'atlas.recyclebin',
          cutover: 'Manual',
        }),
      );
      let moving: string[] = [];
      for (let pass = 0; pass < 5 && moving[0] !== 'migrating'; pass++) moving = await nextPass();
      expect(moving).toEqual(['migrating']);
      // The file is not touched again: the next pass can only be the requeue.
      expect(await nextPass()).toEqual(['migrating']);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
    // Abandoned (back to the source) so nothing of it stays replicating.
    await writeFile(claimFile, spec('atlas'));
    expect(
      (await runCli(['reconcile', '--config', configFile, '--claims', claimsDir, '--out', out])).code,
    ).toBe(0);
    expect(await leftovers('heron')).toEqual({ slots: 0, logins: 0, publications: 0, subscriptions: 0 });
  });

  it('canary: pointing the claim back before cutover abandons the target cleanly', async () => {
    const { out, r, dir, base } = await canaryClaimOnSource(
      'homing',
      'CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)',
    );
    await r.reconcile(claims('homing', { ...base, instanceLabel: 'atlas.recyclebin' }));
    expect(await databaseExists(b, 'homing')).toBe(true);

    const back = await r.reconcile(claims('homing', { ...base, instanceLabel: 'atlas' }));
    expect(back.outcomes[0]!.error).toBeUndefined();
    expect(await port(dir)).toBe(a.port);
    expect(await exists(join(out, 'default', 'homing-canary'))).toBe(false);
    expect(await databaseExists(b, 'homing')).toBe(false); // retired under Delete
    expect(await leftovers('homing')).toEqual({ slots: 0, logins: 0, publications: 0, subscriptions: 0 });
    const status = await readStatus(statusPath(out, 'default', 'homing'));
    expect(status).toMatchObject({ error: null, retired: [], migration: null, binding: { port: a.port } });
    expect(await withSecretClient(dir, async (c) => (await c.query('SELECT id FROM t')).rows)).toEqual([
      { id: 1 },
    ]);
  });
  it('a claim deleted mid-migration drops the replication, the canary secret and both databases (Delete)', async () => {
    const out = join(work.path, 'out-deleted');
    const r = reconciler(out);
    const base = { deletionPolicy: 'Delete', cutover: 'Manual' };
    await r.reconcile(claims('quitter', { ...base, instanceLabel: 'atlas' }));
    await withSecretClient(join(out, 'default', 'quitter'), (c) =>
      c.query('CREATE TABLE t (id int PRIMARY KEY)'),
    );
    expect(
      (await r.reconcile(claims('quitter', { ...base, instanceLabel: 'atlas.recyclebin' }))).outcomes,
    ).toMatchObject([{ result: 'migrating' }]);
    const gone = await r.reconcile([], { prune: true });
    expect(gone.outcomes).toMatchObject([{ claim: 'default/quitter', result: 'deleted' }]);
    expect(gone.outcomes[0]!.actions).toContain('dropped the migration in progress');
    expect(await leftovers('quitter')).toEqual({ slots: 0, logins: 0, publications: 0, subscriptions: 0 });
    expect(await databaseExists(a, 'quitter')).toBe(false);
    expect(await databaseExists(b, 'quitter')).toBe(false);
    expect(await exists(join(out, 'default', 'quitter-canary'))).toBe(false);
  });

  it('a dry run stops at the first migration step and changes nothing', async () => {
    const out = join(work.path, 'out-dry');
    const dir = join(out, 'default', 'dryer');
    await reconciler(out).reconcile(claims('dryer', { instanceLabel: 'atlas', deletionPolicy: 'Delete' }));
    await withSecretClient(dir, (c) =>
      c.query('CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)'),
    );
    const steps: string[] = [];
    const dry = new Reconciler({
      config,
      outputDir: out,
      onStep: ({ action }) => {
        steps.push(action);
        return 'skip';
      },
    });
    const result = await dry.reconcile(
      claims('dryer', { instanceLabel: 'atlas.recyclebin', deletionPolicy: 'Delete' }),
    );
    expect(result.outcomes[0]!.error).toBeUndefined();
    expect(result.outcomes).toMatchObject([{ result: 'migrating' }]);
    expect(result.outcomes[0]!.actions.at(-1)).toBe(
      'migration schema (dry run: the migration would begin-migration next)',
    );
    expect(steps.at(-1)).toBe('begin-migration');
    expect(await databaseExists(b, 'dryer')).toBe(false);
    expect(await port(dir)).toBe(a.port);
    expect((await readStatus(statusPath(out, 'default', 'dryer')))?.migration ?? null).toBeNull();
  });

  it('a target that fails mid-migration leaves the application on the source; the move resumes when it is back', async () => {
    const { out, r, dir, base } = await canaryClaimOnSource(
      'fragile',
      "CREATE TABLE t (id serial PRIMARY KEY, v text); INSERT INTO t (v) VALUES ('before')",
    );
    const moving = claims('fragile', { ...base, instanceLabel: 'atlas.recyclebin' });
    expect((await r.reconcile(moving)).outcomes).toMatchObject([{ result: 'migrating' }]);

    await b.shutdown('immediate');
    try {
      const failed = await r.reconcile(moving);
      expect(failed.outcomes).toMatchObject([{ result: 'error' }]);
      expect(await port(dir)).toBe(a.port);
      // The application keeps working on the source meanwhile.
      await withSecretClient(dir, (c) => c.query(`INSERT INTO t (v) VALUES ('while the target was down')`));
      expect((await readStatus(statusPath(out, 'default', 'fragile')))?.error).toEqual(expect.any(String));
    } finally {
      await b.restart();
    }
    const approved = claims('fragile', { ...base, instanceLabel: 'atlas.recyclebin', cutoverApproved: true });
    const resumed = (await r.reconcile(approved)).outcomes[0];
    expect(resumed, JSON.stringify(resumed)).toMatchObject({ result: 'moved' });
    expect(await port(dir)).toBe(b.port);
    expect(
      await withSecretClient(dir, async (c) => (await c.query('SELECT v FROM t ORDER BY id')).rows),
    ).toEqual([{ v: 'before' }, { v: 'while the target was down' }]);
  });
});
