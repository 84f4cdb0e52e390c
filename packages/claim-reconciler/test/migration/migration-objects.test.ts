/**
 * What a move carries beyond tables with primary keys (issue 28.3), between two real
 * clusters under an insert/update/delete load through hotload-pg: tables without a primary
 * key (one with a unique index on NOT NULL columns, one with none), privileges granted to
 * another role, comments, non-default collations and an extension. Each kind's result is
 * asserted on its own; every acknowledged write is on the target.
 */
import { join } from 'node:path';
import { Pool } from 'hotload-pg';
import { LOGICAL_REPLICATION_SETTINGS, type PostgresCluster, WorkerLoad } from 'hotload-test-support';
import { claimYaml, startReconcilerInstances, withSecretClient } from 'hotload-test-support/claims';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseClaims, parseReconcilerConfig, Reconciler, readStatus, statusPath } from '../../src/index.js';

let source: PostgresCluster;
let target: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let config: ReturnType<typeof parseReconcilerConfig>;

beforeAll(async () => {
  const logical = { settings: LOGICAL_REPLICATION_SETTINGS };
  let clusters: Record<'here' | 'there', PostgresCluster>;
  let configText: string;
  let configFile: string;
  ({ clusters, work, configFile, configText } = await startReconcilerInstances({
    here: logical,
    there: logical,
  }));
  ({ here: source, there: target } = clusters);
  config = parseReconcilerConfig(configText, configFile);
  // Roles are instance-wide: the grantee exists on both instances, as an operator would set it up.
  await Promise.all([source, target].map((c) => c.query('CREATE ROLE reporting NOLOGIN')));
});

afterAll(async () => {
  await Promise.all([source?.stop(), target?.stop()]);
  await work?.cleanup();
});

function claims(instanceLabel: string) {
  const text = claimYaml('objects', {
    databaseName: 'objects',
    userName: 'objects',
    instanceLabel,
    deletionPolicy: 'Delete',
  });
  const parsed = parseClaims(text, 'claims.yaml');
  expect(parsed.problems).toEqual([]);
  return parsed.claims;
}

/** Two tables without a primary key, written alike; the rest of the kinds around them. */
const SCHEMA = `
  CREATE EXTENSION citext;
  CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
  CREATE TABLE events (worker int NOT NULL, seq int NOT NULL, v int NOT NULL, tag text COLLATE "C",
                       UNIQUE (worker, seq));
  CREATE TABLE log_lines (worker int NOT NULL, seq int NOT NULL, v int NOT NULL, email citext,
                          name text COLLATE nocase);
  CREATE INDEX log_lines_worker ON log_lines (worker, seq);
  COMMENT ON TABLE events IS 'one row per event';
  COMMENT ON COLUMN log_lines.email IS 'who wrote it';
  COMMENT ON INDEX log_lines_worker IS 'per worker';
  COMMENT ON COLLATION nocase IS 'case-insensitive';
  GRANT SELECT ON events TO reporting;
  GRANT SELECT (v, name) ON log_lines TO reporting;
  INSERT INTO events (worker, seq, v) SELECT -1, g, g FROM generate_series(1, 1000) g;
  INSERT INTO log_lines (worker, seq, v, email, name) SELECT -1, g, g, 'Seed@Example', 'Seed' FROM generate_series(1, 1000) g;`;

/** The rows workers wrote, `worker:seq` → v, read from `table` on the target. */
async function writtenRows(client: pg.Client, table: string): Promise<Map<string, number>> {
  const { rows } = await client.query<{ key: string; v: number }>(
    `SELECT worker || ':' || seq AS key, v FROM ${table} WHERE worker >= 0`,
  );
  return new Map(rows.map((row) => [row.key, row.v]));
}

describe('a move carries more than tables with primary keys', () => {
  it('moves tables without a primary key, grants, comments, collations and an extension under load', async () => {
    const out = join(work.path, 'out');
    const r = new Reconciler({ config, outputDir: out, migration: { drainGraceMillis: 10_000 } });
    const dir = join(out, 'default', 'objects');
    await r.reconcile(claims('here'));
    await withSecretClient(dir, (c) => c.query(SCHEMA));

    const pool = new Pool({
      max: 4,
      hotload: { source: { secretDirectory: dir }, drainTimeoutMillis: 10_000 },
    });
    const live = new Map<string, number>(); // `worker:seq` → last v, the same in both tables
    const deleted = new Set<string>();
    const own: number[][] = [[], [], [], []];
    const load = new WorkerLoad(4, async (worker, n) => {
      const mine = own[worker]!;
      if (n % 4 === 2 && mine.length > 0) {
        const seq = mine[n % mine.length]!;
        for (const table of ['events', 'log_lines'])
          await pool.query(`UPDATE ${table} SET v = $3 WHERE worker = $1 AND seq = $2`, [worker, seq, n]);
        live.set(`${worker}:${seq}`, n);
      } else if (n % 4 === 3 && mine.length > 2) {
        const seq = mine.shift()!;
        for (const table of ['events', 'log_lines'])
          await pool.query(`DELETE FROM ${table} WHERE worker = $1 AND seq = $2`, [worker, seq]);
        live.delete(`${worker}:${seq}`);
        deleted.add(`${worker}:${seq}`);
      } else {
        await pool.query('INSERT INTO events (worker, seq, v) VALUES ($1, $2, $2)', [worker, n]);
        await pool.query(
          `INSERT INTO log_lines (worker, seq, v, email, name) VALUES ($1, $2, $2, 'W@Example', 'Writer')`,
          [worker, n],
        );
        mine.push(n);
        live.set(`${worker}:${n}`, n);
      }
    });
    let actions: string[] = [];
    try {
      await load.moreSucceeded(200);
      let moved = await r.reconcile(claims('there'));
      actions = [...moved.outcomes[0]!.actions];
      while (moved.outcomes[0]?.result === 'migrating') {
        moved = await r.reconcile(claims('there'));
        actions.push(...moved.outcomes[0]!.actions);
      }
      expect(moved.outcomes[0]?.error).toBeUndefined();
      expect(moved.outcomes).toMatchObject([{ result: 'moved', matchedLabel: 'there' }]);
      await load.moreSucceeded(200); // and on the target
    } finally {
      await load.stop();
      await pool.end();
    }
    expect(load.failures).toEqual([]);

    const client = new pg.Client(target.connectionConfig({ database: 'objects' }));
    await client.connect();
    try {
      // Tables without a primary key: every acknowledged insert, update and delete, in both.
      for (const table of ['events', 'log_lines']) {
        const onTarget = await writtenRows(client, table);
        const missing = [...live.keys()].filter((key) => !onTarget.has(key));
        const stale = [...live].filter(([key, v]) => onTarget.has(key) && onTarget.get(key) !== v);
        const resurrected = [...deleted].filter((key) => onTarget.has(key));
        expect({ table, missing, stale, resurrected, extra: onTarget.size - live.size }).toEqual({
          table,
          missing: [],
          stale: [],
          resurrected: [],
          extra: 0,
        });
      }
      // ... by the identity chosen, reported in the status and the log, mirrored on the target.
      const status = await readStatus(statusPath(out, 'default', 'objects'));
      expect(status?.migration).toMatchObject({
        phase: 'done',
        error: null,
        replicaIdentities: [
          { table: 'public.events', identity: 'index', index: 'events_worker_seq_key' },
          { table: 'public.log_lines', identity: 'full', index: null },
        ],
      });
      expect(actions).toContain(
        'replica identity for tables without a primary key: public.events USING INDEX events_worker_seq_key, public.log_lines FULL',
      );
      const identities = await client.query(
        `SELECT relname, relreplident FROM pg_class WHERE relname IN ('events', 'log_lines') ORDER BY 1`,
      );
      expect(identities.rows).toEqual([
        { relname: 'events', relreplident: 'i' },
        { relname: 'log_lines', relreplident: 'f' },
      ]);

      // Privileges granted to another role.
      const privileges = await client.query(
        `SELECT has_table_privilege('reporting', 'events', 'SELECT') AS events,
                has_column_privilege('reporting', 'log_lines', 'name', 'SELECT') AS name,
                has_column_privilege('reporting', 'log_lines', 'email', 'SELECT') AS email`,
      );
      expect(privileges.rows).toEqual([{ events: true, name: true, email: false }]);

      // Comments.
      const comments = await client.query(
        `SELECT obj_description('events'::regclass, 'pg_class') AS events,
                col_description('log_lines'::regclass, 4) AS email,
                obj_description('log_lines_worker'::regclass, 'pg_class') AS index,
                (SELECT obj_description(oid, 'pg_collation') FROM pg_collation WHERE collname = 'nocase') AS collation`,
      );
      expect(comments.rows).toEqual([
        {
          events: 'one row per event',
          email: 'who wrote it',
          index: 'per worker',
          collation: 'case-insensitive',
        },
      ]);

      // Non-default collations: the columns keep theirs, and the created one compares as it did.
      const collations = await client.query(
        `SELECT a.attname, co.collname FROM pg_attribute a JOIN pg_collation co ON co.oid = a.attcollation
          WHERE a.attrelid IN ('events'::regclass, 'log_lines'::regclass) AND a.attname IN ('tag', 'name') ORDER BY 1`,
      );
      expect(collations.rows).toEqual([
        { attname: 'name', collname: 'nocase' },
        { attname: 'tag', collname: 'C' },
      ]);
      const byName = await client.query(`SELECT count(*)::int AS n FROM log_lines WHERE name = 'SEED'`);
      expect(byName.rows).toEqual([{ n: 1000 }]);

      // The extension: created on the target in the same schema, its type's values intact.
      const extension = await client.query(
        `SELECT e.extname, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
          WHERE e.extname <> 'plpgsql'`,
      );
      expect(extension.rows).toEqual([{ extname: 'citext', nspname: 'public' }]);
      const byEmail = await client.query(
        `SELECT count(*)::int AS n FROM log_lines WHERE email = 'seed@example'`,
      );
      expect(byEmail.rows).toEqual([{ n: 1000 }]);
    } finally {
      await client.end();
    }
  });
});
