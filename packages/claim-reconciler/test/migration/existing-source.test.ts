/**
 * `useExistingSource: true`: the claim's users are created and rotated in place on the
 * database its `sourceDataFrom` names by a DSN file (whose login acts as master there),
 * the secret points at that database, nothing is copied, and deleting the claim never
 * drops it. Turned back to false, the database moves to the claim's own instance by the
 * online migration. Two real clusters with wal_level=logical.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Pool } from 'hotload-pg';
import { nextEvent, type PostgresCluster, WorkerLoad } from 'hotload-test-support';
import { claimYaml, rolesLike, startLogicalPair, withSecretClient } from 'hotload-test-support/claims';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseClaim, ReconcilerConfig } from '../../src/index.js';
import { parseClaims, Reconciler, readStatus, statusPath } from '../../src/index.js';

let a: PostgresCluster;
let b: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let config: ReconcilerConfig;

beforeAll(async () => {
  ({ a, b, work, config } = await startLogicalPair());
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await work?.cleanup();
});

/** The claims in `yaml`, read as if from `file`. */
function parsed(yaml: string, file: string): DatabaseClaim[] {
  const result = parseClaims(yaml, file);
  expect(result.problems).toEqual([]);
  return result.claims;
}

/**
 * A claim on atlas.recyclebin whose source is `dsnFile`; `inPlace` is its
 * `useExistingSource` (the line is left out when undefined).
 */
function existingClaim(name: string, dsnFile: string | undefined, inPlace: boolean | undefined): string {
  const base = claimYaml(name, {
    instanceLabel: 'atlas.recyclebin',
    databaseName: name.replace(/-/g, '_'),
    userName: name.replace(/-/g, '_'),
    deletionPolicy: 'Delete',
  });
  const flag = inPlace === undefined ? '' : `  useExistingSource: ${inPlace}\n`;
  const source =
    dsnFile === undefined
      ? ''
      : `  sourceDataFrom:\n    type: database\n    database:\n      dsnFile: ${dsnFile}\n`;
  return `${base}${flag}${source}`;
}

/**
 * A database `database` on `a` with 2000 rows in `items`, owned by a login `owner` that
 * may create roles (not a superuser), and a DSN file for it in `dir`.
 */
async function legacyDatabase(
  database: string,
  dir: string,
  login: { user: string; password: string; createRole: boolean } | 'superuser',
): Promise<string> {
  const file = join(dir, `${database}.dsn`);
  await mkdir(dir, { recursive: true });
  if (login === 'superuser') {
    await a.query(`CREATE DATABASE ${database}`);
    await writeFile(file, `${a.connectionString({ database })}?sslmode=disable\n`);
  } else {
    await a.query(
      `CREATE ROLE ${login.user} LOGIN ${login.createRole ? 'CREATEROLE' : ''} PASSWORD '${login.password}'`,
    );
    await a.query(`CREATE DATABASE ${database} OWNER ${login.user}`);
    const uri = a.connectionString({ database, user: login.user, password: login.password });
    await writeFile(file, `${uri}?sslmode=disable\n`);
  }
  const owner = login === 'superuser' ? {} : { user: login.user, password: login.password };
  const c = new pg.Client(a.connectionConfig({ database, ...owner }));
  await c.connect();
  try {
    await c.query(`CREATE TABLE items (id bigserial PRIMARY KEY, v int NOT NULL);
                   INSERT INTO items (v) SELECT g FROM generate_series(1, 2000) g;`);
  } finally {
    await c.end();
  }
  return file;
}

async function databases(cluster: PostgresCluster, name: string): Promise<number> {
  return (await cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rows.length;
}

describe('useExistingSource: managing users on an existing database in place', () => {
  it('creates and rotates the claim users on the existing database; deletion leaves the database', async () => {
    const password = 'Legacy-Owner-Pw-7731';
    const claimsDir = join(work.path, 'claims-inplace');
    await legacyDatabase('legacy_inplace', claimsDir, { user: 'legacy_owner', password, createRole: true });
    const out = join(work.path, 'out-inplace');
    const file = join(claimsDir, 'inplace.yaml');
    const claims = parsed(existingClaim('inplace', 'legacy_inplace.dsn', true), file);
    const r = new Reconciler({ config, outputDir: out });

    const first = await r.reconcile(claims);
    expect(first.outcomes).toMatchObject([
      { result: 'created', activeUser: 'inplace_a', matchedLabel: 'existing' },
    ]);
    expect(JSON.stringify(first)).not.toContain(password);
    const dir = join(out, 'default', 'inplace');
    expect(await readFile(join(dir, 'database'), 'utf8')).toBe('legacy_inplace');
    expect(await readFile(join(dir, 'port'), 'utf8')).toBe(String(a.port));
    // Users on the existing database's instance, nothing on the claim's own instance.
    expect(await rolesLike(a, 'inplace')).toEqual(['inplace', 'inplace_a', 'inplace_b']);
    expect(await rolesLike(b, 'inplace')).toEqual([]);
    expect(await databases(b, 'inplace')).toBe(0);
    const status = await readStatus(statusPath(out, 'default', 'inplace'));
    expect(status).toMatchObject({
      error: null,
      binding: {
        label: 'existing',
        port: a.port,
        databaseName: 'legacy_inplace',
        existingSource: { kind: 'dsn-file', file: join(claimsDir, 'legacy_inplace.dsn') },
      },
    });
    expect(status?.migration ?? null).toBeNull();
    expect(JSON.stringify(status)).not.toContain(password);

    // An application on the secret through hotload-pg reads the rows that were there.
    const pool = new Pool({
      max: 2,
      hotload: { source: { secretDirectory: dir }, drainTimeoutMillis: 5_000 },
    });
    try {
      const before = await pool.query<{ n: number; who: string }>(
        'SELECT count(*)::int AS n, session_user AS who FROM items',
      );
      expect(before.rows).toEqual([{ n: 2000, who: 'inplace_a' }]);
      await pool.query('INSERT INTO items (v) VALUES (-1)');

      // Rotation: the other user gets a fresh password there and the application follows it.
      const switched = nextEvent(pool, 'switch');
      const rotated = await r.reconcile(claims, { rotate: true });
      expect(rotated.outcomes).toMatchObject([{ result: 'rotated', activeUser: 'inplace_b' }]);
      await switched;
      const after = await pool.query<{ n: number; who: string }>(
        'SELECT count(*)::int AS n, session_user AS who FROM items',
      );
      expect(after.rows).toEqual([{ n: 2001, who: 'inplace_b' }]);
    } finally {
      await pool.end();
    }

    // Deleting the claim (policy Delete) drops its login users, never the database. The
    // DSN's login (no superuser, no pg_signal_backend) may not end their open sessions: said.
    const session = new pg.Client({ connectionString: await readFile(join(dir, 'uri_dsn.txt'), 'utf8') });
    await session.connect();
    const gone = await r.reconcile([], { prune: true });
    await session.end();
    expect(gone.outcomes).toMatchObject([{ claim: 'default/inplace', result: 'deleted' }]);
    const actions = gone.outcomes[0]!.actions.join('\n');
    expect(actions).toMatch(/left database .*legacy_inplace in place: the database is not this claim's/);
    expect(actions).toContain('dropped roles inplace_a, inplace_b');
    expect(actions).toMatch(/could not end the sessions of inplace_a, inplace_b .*pg_signal_backend/);
    expect(await databases(a, 'legacy_inplace')).toBe(1);
    expect((await a.query('SELECT count(*)::int AS n FROM items', [], 'legacy_inplace')).rows).toEqual([
      { n: 2001 },
    ]);
    expect(await rolesLike(a, 'inplace')).toEqual(['inplace']);
  });

  it('refuses claimRef, a missing sourceDataFrom and a login without the privileges, naming them, never the password', async () => {
    const claimsDir = join(work.path, 'claims-refused');
    const file = join(claimsDir, 'refused.yaml');
    const shared = `${claimYaml('shared', { instanceLabel: 'atlas', databaseName: 'shared', userName: 'shared' })}  useExistingSource: true\n  sourceDataFrom:\n    type: database\n    database:\n      claimRef:\n        name: origin\n`;
    const loose = existingClaim('loose', undefined, true);
    const problems = parseClaims(`${shared}---\n${loose}`, file).problems.map(
      (p) => `${p.path}: ${p.message}`,
    );
    expect(problems).toEqual([
      expect.stringMatching(
        /spec\.useExistingSource: cannot use claimRef \(default\/origin\): two claims would share one database/,
      ),
      expect.stringMatching(
        /spec\.useExistingSource: needs spec\.sourceDataFrom naming the existing database/,
      ),
    ]);

    const password = 'Weak-Login-Pw-5519';
    await legacyDatabase('legacy_weak', claimsDir, { user: 'weak_owner', password, createRole: false });
    const out = join(work.path, 'out-refused');
    const pass = await new Reconciler({ config, outputDir: out }).reconcile(
      parsed(existingClaim('weak', 'legacy_weak.dsn', true), join(claimsDir, 'weak.yaml')),
    );
    expect(pass.outcomes).toMatchObject([{ result: 'error' }]);
    const error = pass.outcomes[0]!.error!;
    expect(error).toContain(`the login weak_owner of DSN file ${join(claimsDir, 'legacy_weak.dsn')}`);
    expect(error).toMatch(/cannot manage users on .*legacy_weak: it lacks CREATEROLE/);
    expect(error).not.toContain(password);
    const status = await readStatus(statusPath(out, 'default', 'weak'));
    expect(JSON.stringify(status)).not.toContain(password);
    expect(await rolesLike(a, 'weak_')).toEqual(['weak_owner']);

    // A claim with a database of its own cannot start using an existing one in place.
    await legacyDatabase('legacy_taken', claimsDir, 'superuser');
    const ownFile = join(claimsDir, 'owned.yaml');
    const owned = claimYaml('owned', {
      instanceLabel: 'atlas.recyclebin',
      databaseName: 'owned',
      userName: 'owned',
    });
    const ownOut = join(work.path, 'out-owned');
    const r = new Reconciler({ config, outputDir: ownOut });
    expect((await r.reconcile(parsed(owned, ownFile))).outcomes).toMatchObject([{ result: 'created' }]);
    const switched = await r.reconcile(parsed(existingClaim('owned', 'legacy_taken.dsn', true), ownFile));
    expect(switched.outcomes).toMatchObject([{ result: 'error' }]);
    expect(switched.outcomes[0]!.error).toMatch(
      /useExistingSource: the claim's database is .*\/owned; it cannot switch to managing .*\/legacy_taken in place/,
    );
    expect(await readFile(join(ownOut, 'default', 'owned', 'port'), 'utf8')).toBe(String(b.port));
    expect(await rolesLike(a, 'owned')).toEqual([]);
  });

  it("a seed naming (claimRef) a claim that uses a database in place reads it through that database's DSN", async () => {
    const claimsDir = join(work.path, 'claims-seeded');
    await legacyDatabase('legacy_shared', claimsDir, 'superuser');
    const file = join(claimsDir, 'claims.yaml');
    const source = existingClaim('shared-src', 'legacy_shared.dsn', true);
    const copy = `${claimYaml('src-copy', { instanceLabel: 'atlas.recyclebin', databaseName: 'src_copy', userName: 'src_copy' })}  sourceDataFrom:\n    type: database\n    database:\n      claimRef:\n        name: shared-src\n`;
    const out = join(work.path, 'out-seeded');
    const r = new Reconciler({ config, outputDir: out });
    expect((await r.reconcile(parsed(source, file))).outcomes).toMatchObject([{ result: 'created' }]);
    const pass = await r.reconcile(parsed(`${source}---\n${copy}`, file));
    expect(pass.outcomes.map((o) => o.result)).toEqual(['unchanged', 'error']);
    // The source was reached and read (its schema checked), not looked up as a fragment key;
    // it holds the in-place claim's grants to shared_src, a role the seed's target lacks,
    // which any seed refuses by name.
    const error = pass.outcomes[1]!.error!;
    expect(error).toMatch(
      /^seed of .*src_copy from claim default\/shared-src \(schema\): cannot migrate: privileges granted to role shared_src/,
    );
    expect(error).not.toMatch(/fragment key/);
  });

  it('turned back to false, the database moves to the claim own instance and the existing one stays', async () => {
    const claimsDir = join(work.path, 'claims-flip');
    await legacyDatabase('legacy_flip', claimsDir, 'superuser');
    const out = join(work.path, 'out-flip');
    const file = join(claimsDir, 'flip.yaml');
    const r = new Reconciler({ config, outputDir: out });
    const inPlace = await r.reconcile(parsed(existingClaim('flip', 'legacy_flip.dsn', true), file));
    expect(inPlace.outcomes).toMatchObject([{ result: 'created', activeUser: 'flip_a' }]);
    const dir = join(out, 'default', 'flip');

    // An application keeps inserting through hotload-pg while the database moves.
    const pool = new Pool({
      max: 4,
      hotload: { source: { secretDirectory: dir }, drainTimeoutMillis: 5_000 },
    });
    const acknowledged = new Set<string>();
    const load = new WorkerLoad(3, async () => {
      const { rows } = await pool.query<{ id: string }>(
        'INSERT INTO items (v) VALUES (-2) RETURNING id::text',
      );
      acknowledged.add(rows[0]!.id);
    });
    try {
      await load.moreSucceeded(100);
      const moved = await r.reconcile(parsed(existingClaim('flip', 'legacy_flip.dsn', false), file));
      expect(moved.outcomes[0]?.error).toBeUndefined();
      expect(moved.outcomes).toMatchObject([{ result: 'moved', matchedLabel: 'atlas.recyclebin' }]);
      await load.moreSucceeded(100); // writes now land on the claim's own database
    } finally {
      await load.stop();
      await pool.end();
    }
    expect(load.failures).toEqual([]);
    expect(await readFile(join(dir, 'port'), 'utf8')).toBe(String(b.port));
    const onTarget = await withSecretClient(dir, async (c) => {
      const { rows } = await c.query<{ id: string; db: string }>(
        'SELECT id::text, current_database() AS db FROM items',
      );
      expect(new Set(rows.map((row) => row.db))).toEqual(new Set(['flip']));
      return new Set(rows.map((row) => row.id));
    });
    expect([...acknowledged].filter((id) => !onTarget.has(id))).toEqual([]);
    expect(onTarget.size).toBe(2000 + acknowledged.size);
    const status = await readStatus(statusPath(out, 'default', 'flip'));
    expect(status).toMatchObject({
      error: null,
      retired: [],
      binding: { label: 'atlas.recyclebin', port: b.port, databaseName: 'flip' },
      migration: { phase: 'done', source: { label: 'existing', databaseName: 'legacy_flip' } },
    });
    // The existing database stays with its data; the claim's login users there are gone.
    expect(await databases(a, 'legacy_flip')).toBe(1);
    const left = await a.query<{ n: number }>('SELECT count(*)::int AS n FROM items', [], 'legacy_flip');
    expect(left.rows[0]!.n).toBeGreaterThanOrEqual(2100);
    expect(await rolesLike(a, 'flip')).toEqual(['flip']);
    expect((await a.query('SELECT 1 FROM pg_replication_slots')).rows).toEqual([]);
  });
});
