/**
 * The migration state machine on its own, between two real clusters with
 * wal_level=logical: schema, initial copy, streaming, a manual cutover that waits, then
 * cutover, drain and the final position; the link is gone afterwards. A source without
 * wal_level=logical is refused with the setting named, before anything is created.
 */

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LOGICAL_REPLICATION_SETTINGS, type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MigrationRefusedError, ReplicationConflictError } from '../../src/migration/migration-errors.js';
import { type MigrationState, newMigration } from '../../src/migration/migration-state.js';
import {
  type DatabaseSession,
  type MigrationEndpoints,
  type MigrationHooks,
  runMigration,
} from '../../src/migration/online-migration.js';
import type { SqlClient } from '../../src/migration/sql-client.js';
import { MOVE_STEPS } from './migration-steps.js';

let a: PostgresCluster;
let b: PostgresCluster;
let plain: PostgresCluster;

beforeAll(async () => {
  [a, b, plain] = await Promise.all([
    startCluster({ settings: LOGICAL_REPLICATION_SETTINGS }),
    // A failing change is retried every wal_retrieve_retry_interval (5 s by default).
    startCluster({ settings: { ...LOGICAL_REPLICATION_SETTINGS, wal_retrieve_retry_interval: '200ms' } }),
    startCluster(),
  ]);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop(), plain?.stop()]);
});

function session(cluster: PostgresCluster, database: string): DatabaseSession {
  return async <T>(work: (client: SqlClient) => Promise<T>): Promise<T> => {
    const client = new pg.Client(cluster.connectionConfig({ database }));
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
}

async function withDatabase<T>(
  cluster: PostgresCluster,
  database: string,
  work: (c: pg.Client) => Promise<T>,
) {
  return session(cluster, database)((client) => work(client as pg.Client));
}

async function prepare(cluster: PostgresCluster, name: string): Promise<void> {
  await cluster.query(`CREATE ROLE ${name} NOLOGIN`).catch(() => {});
  await cluster.query(`CREATE DATABASE ${name} OWNER ${name}`);
  await cluster.query(`CREATE ROLE ${name}_a LOGIN IN ROLE ${name}`).catch(() => {});
}

function endpoints(source: PostgresCluster, target: PostgresCluster, name: string): MigrationEndpoints {
  return {
    source: session(source, name),
    target: session(target, name),
    sourceAddress: { host: source.host, port: source.port, database: name, sslmode: 'disable' },
    describe: { source: `${source.host}:${source.port}`, target: `${target.host}:${target.port}` },
    baseRole: name,
    sourceUsers: [`${name}_a`, `${name}_b`],
  };
}

function binding(cluster: PostgresCluster, name: string) {
  return {
    label: 'x',
    host: cluster.host,
    port: cluster.port,
    databaseName: name,
    userName: name,
    deletionPolicy: 'Delete' as const,
  };
}

/** A migration of database `name` from cluster `a` to cluster `b`, about to start. */
function moveFromAToB(name: string, replicationName: string, { manualCutover }: { manualCutover: boolean }) {
  return newMigration({
    source: binding(a, name),
    target: binding(b, name),
    replicationName,
    manualCutover,
    now: new Date(),
  });
}

class RecordingHooks implements MigrationHooks {
  readonly steps: string[] = [];
  readonly saved: MigrationState[] = [];
  published = 0;
  canaries = 0;
  cutoverApproved = false;
  async step(action: string) {
    this.steps.push(action);
  }
  async save(state: MigrationState) {
    this.saved.push(state);
  }
  async publishTarget() {
    this.published++;
  }
  async publishCanary() {
    this.canaries++;
    return 'app-canary';
  }
  async removeCanary() {}
}

async function replicationObjects(name: string) {
  const slots = await a.query('SELECT slot_name FROM pg_replication_slots');
  const pubs = await withDatabase(a, name, (c) => c.query('SELECT pubname FROM pg_publication'));
  const subs = await withDatabase(b, name, (c) => c.query('SELECT subname FROM pg_subscription'));
  const logins = await a.query(`SELECT rolname FROM pg_roles WHERE rolname LIKE 'hotload_mig_%'`);
  return {
    slots: slots.rows.length,
    pubs: pubs.rows.length,
    subs: subs.rows.length,
    logins: logins.rows.length,
  };
}

/** Resolves once backend `pid` of `cluster` waits on `event` (pg_stat_activity, polled). */
async function untilWaitEvent(cluster: PostgresCluster, pid: number, event: string): Promise<void> {
  for (;;) {
    const { rows } = await cluster.query(
      'SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event = $2',
      [pid, event],
    );
    if (rows.length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** `synchronous_standby_names` as the configuration files of `cluster` set it (no rows: unset). */
async function synchronousStandbySetting(cluster: PostgresCluster) {
  return (
    await cluster.query(`SELECT setting FROM pg_file_settings WHERE name = 'synchronous_standby_names'`)
  ).rows;
}

describe('online migration state machine', () => {
  it('copies, streams, waits for a manual cutover, then cuts over and removes the link', async () => {
    const name = 'runner_app';
    await Promise.all([prepare(a, name), prepare(b, name)]);
    await withDatabase(a, name, async (c) => {
      await c.query(`SET ROLE ${name}`);
      await c.query(`CREATE TYPE mood AS ENUM ('sad', 'happy');
        CREATE TABLE authors (id serial PRIMARY KEY, mood mood NOT NULL);
        CREATE TABLE notes (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, author int REFERENCES authors, body text);
        INSERT INTO authors (mood) SELECT 'happy' FROM generate_series(1, 10);
        INSERT INTO notes (author, body) SELECT 1 + g % 10, 'n' || g FROM generate_series(1, 1000) g;`);
    });
    const hooks = new RecordingHooks();
    const initial = moveFromAToB(name, 'hotload_mig_runner', { manualCutover: true });
    const ends = endpoints(a, b, name);
    const waiting = await runMigration(initial, ends, hooks, { drainGraceMillis: 1000 });
    expect(waiting).toMatchObject({ phase: 'streaming', rowsCopied: 1010, canarySecret: 'app-canary' });
    expect(hooks.published).toBe(0);
    expect(await replicationObjects(name)).toEqual({ slots: 1, pubs: 1, subs: 1, logins: 1 });

    // Changes keep streaming while the canary waits.
    await withDatabase(a, name, (c) =>
      c.query(`INSERT INTO notes (author, body) VALUES (2, 'late'); DELETE FROM notes WHERE id = 5`),
    );
    hooks.cutoverApproved = true;
    const done = await runMigration(waiting, ends, hooks, { drainGraceMillis: 1000 });
    expect(done).toMatchObject({ phase: 'done', canarySecret: null, lagBytes: 0 });
    expect(hooks.published).toBe(1);
    expect(hooks.saved.map((s) => s.phase)).toEqual([
      'copying',
      'streaming',
      'streaming',
      'cutover',
      'draining',
      'draining', // final position confirmed, before the link is dropped
      'done',
    ]);

    const rows = await withDatabase(b, name, (c) =>
      c.query<{ n: number; late: number; gone: number }>(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE body = 'late')::int AS late,
                count(*) FILTER (WHERE id = 5)::int AS gone FROM notes`,
      ),
    );
    expect(rows.rows[0]).toEqual({ n: 1000, late: 1, gone: 0 });
    // Sequences continue past every id the source handed out.
    const next = await withDatabase(b, name, (c) =>
      c.query<{ id: string }>(`INSERT INTO notes (author, body) VALUES (1, 'on target') RETURNING id::text`),
    );
    expect(BigInt(next.rows[0]!.id)).toBeGreaterThan(1001n);
    expect(await replicationObjects(name)).toEqual({ slots: 0, pubs: 0, subs: 0, logins: 0 });
    expect(hooks.steps).toEqual(MOVE_STEPS);
  });

  it('reports a replication conflict and keeps the source and its slot until it is resolved', async () => {
    const name = 'conflict_app';
    await Promise.all([prepare(a, name), prepare(b, name)]);
    await withDatabase(a, name, (c) =>
      c.query(`SET ROLE ${name}; CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a')`),
    );
    const hooks = new RecordingHooks();
    const ends = endpoints(a, b, name);
    const options = { drainGraceMillis: 1000, conflictGraceMillis: 300, waitMillis: 10_000 };
    const initial = moveFromAToB(name, 'hotload_mig_conflict', { manualCutover: true });
    const streaming = await runMigration(initial, ends, hooks, options);
    expect(streaming.phase).toBe('streaming');
    // A write that reached the target directly collides with one replicated from the source.
    await withDatabase(b, name, (c) => c.query(`INSERT INTO t VALUES (2, 'target')`));
    await withDatabase(a, name, (c) => c.query(`INSERT INTO t VALUES (2, 'source')`));
    hooks.cutoverApproved = true;
    const blocked = runMigration(streaming, ends, hooks, options);
    await expect(blocked).rejects.toBeInstanceOf(ReplicationConflictError);
    await expect(blocked).rejects.toThrow(/replication conflict on the target \(.*apply_error_count=\d+/);
    const saved = hooks.saved.at(-1)!;
    expect(saved.conflict).toMatch(/source and its replication slot are kept/);
    expect(await replicationObjects(name)).toMatchObject({ slots: 1, pubs: 1, subs: 1 });

    // Resolved by hand on the target: the move completes with the source's row.
    await withDatabase(b, name, (c) => c.query('DELETE FROM t WHERE id = 2'));
    const done = await runMigration(saved, ends, hooks, options);
    expect(done).toMatchObject({ phase: 'done', conflict: null });
    expect((await withDatabase(b, name, (c) => c.query('SELECT id, v FROM t ORDER BY id'))).rows).toEqual([
      { id: 1, v: 'a' },
      { id: 2, v: 'source' },
    ]);
    expect(await replicationObjects(name)).toEqual({ slots: 0, pubs: 0, subs: 0, logins: 0 });
  });

  it('while both instances take writes, a source commit returns only once the target applied it', async () => {
    const name = 'ordered_app';
    await Promise.all([prepare(a, name), prepare(b, name)]);
    await a.query(`ALTER ROLE ${name}_a PASSWORD 'ordered-app-password'`);
    await withDatabase(a, name, (c) =>
      c.query(`SET ROLE ${name}; CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)`),
    );
    // A session of the application on the source, as an old pool's checkout still holds it.
    const app = new pg.Client({
      ...a.connectionConfig({ database: name }),
      user: `${name}_a`,
      password: 'ordered-app-password',
    });
    app.on('error', () => {}); // the drain terminates it
    await app.connect();
    const seen: Record<string, unknown> = {};
    const hooks = new RecordingHooks();
    // When the secret is republished: the target's apply is held up by a lock, and the
    // application writes on the source. The commit must wait (SyncRep) rather than be
    // acknowledged with the change not on the target yet.
    hooks.publishTarget = async () => {
      await withDatabase(b, name, async (target) => {
        await target.query('BEGIN');
        await target.query('LOCK TABLE t IN SHARE MODE'); // the apply worker needs ROW EXCLUSIVE
        const write = app.query('UPDATE t SET v = 1 WHERE id = 1');
        const pid = (app as unknown as { processID: number }).processID;
        seen.firstOutcome = await Promise.race([
          write.then(() => 'acknowledged while the target had not applied it'),
          untilWaitEvent(a, pid, 'SyncRep').then(() => 'waiting for the target'),
        ]);
        await target.query('COMMIT');
        await write;
        seen.onTargetWhenAcknowledged = (await target.query('SELECT v FROM t WHERE id = 1')).rows[0];
      });
    };
    const done = await runMigration(
      moveFromAToB(name, 'hotload_mig_ordered', { manualCutover: false }),
      endpoints(a, b, name),
      hooks,
      { drainGraceMillis: 1000 },
    );
    await app.end().catch(() => {});
    expect(seen).toEqual({ firstOutcome: 'waiting for the target', onTargetWhenAcknowledged: { v: 1 } });
    expect(done).toMatchObject({ phase: 'done', synchronousApply: 'held' });
    expect(hooks.steps).toEqual(
      expect.arrayContaining(['hold-synchronous-apply', 'release-synchronous-apply']),
    );
    // Released before the subscription went: nothing on the source instance waits any more.
    expect(await synchronousStandbySetting(a)).toEqual([]);
  });

  it('a conflict while apply is synchronous releases it: the source write is acknowledged, the conflict reported', async () => {
    const name = 'clash_app';
    await Promise.all([prepare(a, name), prepare(b, name)]);
    await a.query(`ALTER ROLE ${name}_a PASSWORD 'clash-app-password'`);
    await withDatabase(a, name, (c) =>
      c.query(`SET ROLE ${name}; CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (1, 'a')`),
    );
    const app = new pg.Client({
      ...a.connectionConfig({ database: name }),
      user: `${name}_a`,
      password: 'clash-app-password',
    });
    app.on('error', () => {});
    await app.connect();
    let sourceWrite: Promise<string> | undefined;
    const hooks = new RecordingHooks();
    // Once the secret points at the target, the new pool and an old checkout write the same key.
    hooks.publishTarget = async () => {
      await withDatabase(b, name, (c) => c.query(`INSERT INTO t VALUES (2, 'target')`));
      sourceWrite = app.query(`INSERT INTO t VALUES (2, 'source')`).then(
        async () => {
          await app.end(); // the old pool lets go of its client: the drain goes on
          return 'acknowledged';
        },
        (error: Error) => `failed: ${error.message}`,
      );
    };
    const ends = endpoints(a, b, name);
    // The grace is a hang guard: without the release the write waits until it ends, then fails.
    const options = { drainGraceMillis: 20_000, conflictGraceMillis: 300, waitMillis: 10_000 };
    const initial = moveFromAToB(name, 'hotload_mig_clash', { manualCutover: false });
    await expect(runMigration(initial, ends, hooks, options)).rejects.toBeInstanceOf(
      ReplicationConflictError,
    );
    expect(await sourceWrite).toBe('acknowledged');
    const saved = hooks.saved.at(-1)!;
    expect(saved).toMatchObject({ phase: 'draining', synchronousApply: 'released-after-apply-errors' });
    expect(await synchronousStandbySetting(a)).toEqual([]);

    // Resolved by hand on the target, as any conflict: the move completes with the source's row.
    await withDatabase(b, name, (c) => c.query('DELETE FROM t WHERE id = 2'));
    expect(await runMigration(saved, ends, hooks, options)).toMatchObject({ phase: 'done' });
    expect((await withDatabase(b, name, (c) => c.query('SELECT v FROM t WHERE id = 2'))).rows).toEqual([
      { v: 'source' },
    ]);
    expect(await replicationObjects(name)).toEqual({ slots: 0, pubs: 0, subs: 0, logins: 0 });
  });

  it('copies again when the subscription is gone before cutover (a target that lost it)', async () => {
    const name = 'lost_app';
    await Promise.all([prepare(a, name), prepare(b, name)]);
    await withDatabase(a, name, (c) =>
      c.query(
        `SET ROLE ${name}; CREATE TABLE t (id serial PRIMARY KEY, v text); INSERT INTO t (v) VALUES ('one')`,
      ),
    );
    const hooks = new RecordingHooks();
    const ends = endpoints(a, b, name);
    const streaming = await runMigration(
      moveFromAToB(name, 'hotload_mig_lost', { manualCutover: true }),
      ends,
      hooks,
    );
    expect(streaming.phase).toBe('streaming');
    await withDatabase(b, name, (c) => c.query('DROP SUBSCRIPTION hotload_mig_lost'));
    await withDatabase(a, name, (c) => c.query(`INSERT INTO t (v) VALUES ('two')`));
    hooks.cutoverApproved = true;
    const done = await runMigration(streaming, ends, hooks, { drainGraceMillis: 1000 });
    expect(done.phase).toBe('done');
    expect(hooks.saved.map((s) => s.phase)).toContain('copying');
    expect((await withDatabase(b, name, (c) => c.query('SELECT v FROM t ORDER BY id'))).rows).toEqual([
      { v: 'one' },
      { v: 'two' },
    ]);
  });

  it('keeps the replication password out of a target server log that logs every statement', async () => {
    const logged = await startCluster({
      settings: { ...LOGICAL_REPLICATION_SETTINGS, log_statement: 'all' },
    });
    try {
      const name = 'logged_app';
      await Promise.all([prepare(a, name), prepare(logged, name)]);
      await withDatabase(a, name, (c) => c.query(`SET ROLE ${name}; CREATE TABLE t (id int PRIMARY KEY)`));
      const hooks = new RecordingHooks();
      const done = await runMigration(
        newMigration({
          source: binding(a, name),
          target: binding(logged, name),
          replicationName: 'hotload_mig_logged',
          manualCutover: false,
          now: new Date(),
        }),
        endpoints(a, logged, name),
        hooks,
        { drainGraceMillis: 1000 },
      );
      expect(done.phase).toBe('done');
      const log = await readFile(join(logged.runDir, 'server.log'), 'utf8');
      expect(log).toContain('DROP SUBSCRIPTION'); // statements are logged...
      expect(log).not.toContain('CREATE SUBSCRIPTION'); // ...but not the one carrying the password
      expect(log).not.toMatch(/password=/i);
      expect(JSON.stringify(hooks.saved)).not.toMatch(/password/i);
    } finally {
      await logged.stop();
    }
  });

  it('refuses a source without wal_level=logical, naming the setting, and creates nothing', async () => {
    const name = 'nowal_app';
    await Promise.all([prepare(plain, name), prepare(b, name)]);
    await withDatabase(plain, name, (c) => c.query('CREATE TABLE t (id int PRIMARY KEY)'));
    const hooks = new RecordingHooks();
    const run = runMigration(
      newMigration({
        source: binding(plain, name),
        target: binding(b, name),
        replicationName: 'hotload_mig_nowal',
        manualCutover: false,
        now: new Date(),
      }),
      endpoints(plain, b, name),
      hooks,
    );
    await expect(run).rejects.toBeInstanceOf(MigrationRefusedError);
    await expect(run).rejects.toThrow(
      `source instance ${plain.host}:${plain.port} has wal_level=replica; an online migration needs wal_level=logical`,
    );
    expect(hooks.steps).toEqual([]);
    expect(hooks.published).toBe(0);
  });
});
