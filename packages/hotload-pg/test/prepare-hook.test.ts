/** The `prepare` hook: runs on each new generation before work moves there. */
import { Pool, type SwitchEvent, type VerifyFailedEvent } from 'hotload-pg';
import { nextEvent, type PostgresCluster, startCluster } from 'hotload-test-support';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFor } from './helpers.js';

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startCluster();
  await cluster.query('CREATE DATABASE moved_here');
});
afterAll(async () => {
  await cluster?.stop();
});

describe('hotload.prepare', () => {
  it('runs on the new generation before the switch, so the first query there finds what it made', async () => {
    const prepared: string[] = [];
    const pool = new Pool({
      ...cluster.connectionConfig(),
      hotload: {
        prepare: async (client: pg.PoolClient) => {
          const { rows } = await client.query('SELECT current_database() AS db');
          prepared.push(rows[0].db);
          await client.query('CREATE TABLE IF NOT EXISTS notes (id int)');
        },
      },
    });
    try {
      expect(await pool.switchTo(configFor(cluster, { database: 'moved_here' }))).toBe(true);
      const { rows } = await pool.query("SELECT current_database() AS db, to_regclass('notes') AS t");
      expect(rows[0]).toEqual({ db: 'moved_here', t: 'notes' });
      expect(prepared).toEqual(['moved_here']);
    } finally {
      await pool.end();
    }
  });

  it('treats a failing hook as a failed verify: the current generation serves until a retry succeeds', async () => {
    let calls = 0;
    const pool = new Pool({
      ...cluster.connectionConfig(),
      hotload: {
        verifyRetryInitialMillis: 10,
        verifyRetryMaxMillis: 50,
        prepare: async () => {
          calls++;
          if (calls === 1) throw new Error('schema not ready yet');
        },
      },
    });
    try {
      const failed = nextEvent<VerifyFailedEvent>(pool, 'verifyFailed');
      const switched = nextEvent<SwitchEvent>(pool, 'switch', (e) => e.fromGeneration !== undefined);
      const before = pool.generation;
      const done = pool.switchTo(configFor(cluster, { database: 'moved_here' }));
      expect((await failed).error.message).toContain('schema not ready yet');
      expect(pool.generation).toBe(before);
      expect((await pool.query('SELECT current_database() AS db')).rows[0].db).toBe('postgres');
      expect(await done).toBe(true);
      expect((await switched).attempts).toBe(2);
      expect((await pool.query('SELECT current_database() AS db')).rows[0].db).toBe('moved_here');
    } finally {
      await pool.end();
    }
  });
});
