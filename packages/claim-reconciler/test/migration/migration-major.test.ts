/**
 * A move from an older PostgreSQL major to a newer one (issue 28.2): the source runs 15,
 * the target 18 (the test package installs both), under an insert/update/delete load
 * through hotload-pg. Logical replication works across majors, so the same engine moves
 * the data: every acknowledged write is on the 18 server, none failed.
 */
import { join } from 'node:path';
import { Pool } from 'hotload-pg';
import { LOGICAL_REPLICATION_SETTINGS, type PostgresCluster, WorkerLoad } from 'hotload-test-support';
import { claimYaml, startReconcilerInstances, withSecretClient } from 'hotload-test-support/claims';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseClaims, parseReconcilerConfig, Reconciler, readStatus, statusPath } from '../../src/index.js';

let older: PostgresCluster;
let newer: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let config: ReturnType<typeof parseReconcilerConfig>;

beforeAll(async () => {
  const settings = LOGICAL_REPLICATION_SETTINGS;
  let clusters: Record<'pg15' | 'pg18', PostgresCluster>;
  let configText: string;
  let configFile: string;
  ({ clusters, work, configFile, configText } = await startReconcilerInstances({
    pg15: { settings, majorVersion: 15 },
    pg18: { settings },
  }));
  ({ pg15: older, pg18: newer } = clusters);
  config = parseReconcilerConfig(configText, configFile);
});

afterAll(async () => {
  await Promise.all([older?.stop(), newer?.stop()]);
  await work?.cleanup();
});

function claims(instanceLabel: string) {
  const text = claimYaml('upgrade', {
    databaseName: 'upgrade',
    userName: 'upgrade',
    instanceLabel,
    deletionPolicy: 'Delete',
  });
  const parsed = parseClaims(text, 'claims.yaml');
  expect(parsed.problems).toEqual([]);
  return parsed.claims;
}

async function serverMajor(cluster: PostgresCluster): Promise<number> {
  const { rows } = await cluster.query<{ v: number }>(
    `SELECT current_setting('server_version_num')::int AS v`,
  );
  return Math.floor(rows[0]!.v / 10_000);
}

const SCHEMA = `
  CREATE TYPE kind AS ENUM ('plain', 'urgent');
  CREATE TABLE owners (id serial PRIMARY KEY, name text NOT NULL UNIQUE);
  CREATE TABLE items (
    id bigserial PRIMARY KEY,
    owner int NOT NULL REFERENCES owners (id),
    worker int NOT NULL,
    v int NOT NULL,
    kind kind NOT NULL DEFAULT 'plain',
    note text CHECK (length(note) < 100)
  );
  CREATE INDEX items_worker ON items (worker, v);
  CREATE VIEW urgent_items AS SELECT id, v FROM items WHERE kind = 'urgent';
  INSERT INTO owners (name) VALUES ('w0'), ('w1'), ('w2'), ('w3');
  INSERT INTO items (owner, worker, v) SELECT 1 + g % 4, -1, g FROM generate_series(1, 2000) g;
  -- Read differently by the two majors' catalogs (pg_collation's locale column moved in 17), compared equal.
  CREATE EXTENSION citext;
  CREATE COLLATION nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
  CREATE TABLE tags (name citext NOT NULL, label text COLLATE nocase);
  COMMENT ON TABLE tags IS 'no primary key';
  INSERT INTO tags SELECT 'Tag' || g, 'Label' FROM generate_series(1, 100) g;`;

describe('a move to a newer PostgreSQL major', () => {
  it('moves 15 → 18 under load: every acknowledged write on the target, none failed', async () => {
    expect({ source: await serverMajor(older), target: await serverMajor(newer) }).toEqual({
      source: 15,
      target: 18,
    });
    const out = join(work.path, 'out');
    const r = new Reconciler({ config, outputDir: out, migration: { drainGraceMillis: 10_000 } });
    const dir = join(out, 'default', 'upgrade');
    await r.reconcile(claims('pg15'));
    await withSecretClient(dir, (c) => c.query(SCHEMA));

    const pool = new Pool({
      max: 4,
      hotload: { source: { secretDirectory: dir }, drainTimeoutMillis: 10_000 },
    });
    const live = new Map<string, number>(); // id → last value written
    const deleted = new Set<string>();
    const own: string[][] = [[], [], [], []];
    const load = new WorkerLoad(4, async (worker, n) => {
      const mine = own[worker]!;
      if (n % 4 === 2 && mine.length > 0) {
        const id = mine[n % mine.length]!;
        await pool.query('UPDATE items SET v = $2 WHERE id = $1', [id, n]);
        live.set(id, n);
      } else if (n % 4 === 3 && mine.length > 2) {
        const id = mine.shift()!;
        await pool.query('DELETE FROM items WHERE id = $1', [id]);
        live.delete(id);
        deleted.add(id);
      } else {
        const { rows } = await pool.query<{ id: string }>(
          `INSERT INTO items (owner, worker, v, kind) VALUES ($1, $1 - 1, $2, 'urgent') RETURNING id::text`,
          [worker + 1, n],
        );
        mine.push(rows[0]!.id);
        live.set(rows[0]!.id, n);
      }
    });
    try {
      await load.moreSucceeded(200);
      let moved = await r.reconcile(claims('pg18'));
      while (moved.outcomes[0]?.result === 'migrating') moved = await r.reconcile(claims('pg18'));
      expect(moved.outcomes[0]?.error).toBeUndefined();
      expect(moved.outcomes).toMatchObject([{ result: 'moved', matchedLabel: 'pg18' }]);
      await load.moreSucceeded(200); // and on the 18 server
    } finally {
      await load.stop();
      await pool.end();
    }
    expect(load.failures).toEqual([]);

    const target = new pg.Client(newer.connectionConfig({ database: 'upgrade' }));
    await target.connect();
    try {
      const { rows } = await target.query<{ id: string; v: number }>(
        'SELECT id::text, v FROM items WHERE worker >= 0',
      );
      const onTarget = new Map(rows.map((row) => [row.id, row.v]));
      const missing = [...live.keys()].filter((id) => !onTarget.has(id));
      const stale = [...live].filter(([id, v]) => onTarget.has(id) && onTarget.get(id) !== v);
      const resurrected = [...deleted].filter((id) => onTarget.has(id));
      expect({ missing, stale, resurrected }).toEqual({ missing: [], stale: [], resurrected: [] });
      expect((await target.query('SELECT count(*)::int AS n FROM urgent_items')).rows[0].n).toBe(rows.length);
      const tags = await target.query(
        `SELECT count(*)::int AS n FROM tags WHERE name = 'tag7' AND label = 'LABEL'`,
      );
      expect(tags.rows).toEqual([{ n: 1 }]);
    } finally {
      await target.end();
    }
    const status = await readStatus(statusPath(out, 'default', 'upgrade'));
    expect(status?.migration).toMatchObject({
      phase: 'done',
      error: null,
      synchronousApply: 'held',
      replicaIdentities: [{ table: 'public.tags', identity: 'full', index: null }],
    });
  });
});
