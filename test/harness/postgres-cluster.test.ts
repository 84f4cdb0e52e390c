import { existsSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findLeftoverClusters, isAlive, type PostgresCluster, startCluster } from '../support/index.js';

async function connectAs(config: pg.ClientConfig): Promise<pg.Client> {
  const client = new pg.Client(config);
  await client.connect();
  return client;
}

/** Waits until the standby has replayed everything the primary wrote so far. */
async function waitForReplay(primary: PostgresCluster, standby: PostgresCluster): Promise<void> {
  const { rows } = await primary.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
  const target = rows[0]!.lsn;
  const client = await connectAs(standby.connectionConfig());
  try {
    for (;;) {
      const replayed = await client.query<{ caught_up: boolean }>(
        'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught_up',
        [target],
      );
      if (replayed.rows[0]!.caught_up) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } finally {
    await client.end();
  }
}

describe('PostgresCluster', () => {
  let first: PostgresCluster;
  let second: PostgresCluster;

  beforeAll(async () => {
    [first, second] = await Promise.all([
      startCluster(),
      startCluster({ settings: { wal_level: 'logical' } }),
    ]);
  });

  afterAll(async () => {
    await Promise.all([first?.stop(), second?.stop()]);
  });

  it('runs two clusters at once on different ports, each with its own data', async () => {
    expect(first.port).not.toBe(second.port);
    await first.query('CREATE TABLE only_in_first (id int)');
    const inFirst = await first.query("SELECT to_regclass('only_in_first') AS t");
    const inSecond = await second.query("SELECT to_regclass('only_in_first') AS t");
    expect(inFirst.rows[0]?.t).toBe('only_in_first');
    expect(inSecond.rows[0]?.t).toBeNull();
  });

  it('applies optional settings', async () => {
    const { rows } = await second.query('SHOW wal_level');
    expect(rows[0]?.wal_level).toBe('logical');
  });

  it('authenticates with scram-sha-256: the right password works, a wrong one is rejected', async () => {
    const ok = await connectAs(first.connectionConfig());
    const { rows } = await ok.query(
      "SELECT rolpassword LIKE 'SCRAM-SHA-256$%' AS scram FROM pg_authid WHERE rolname = current_user",
    );
    expect(rows[0]?.scram).toBe(true);
    await ok.end();
    await expect(connectAs(first.connectionConfig({ password: 'not-the-password' }))).rejects.toMatchObject({
      code: '28P01',
    });
  });

  it('restarts on the same port and keeps its data', async () => {
    await first.query('CREATE TABLE survives_restart (id int)');
    const port = first.port;
    await first.restart();
    expect(first.port).toBe(port);
    const { rows } = await first.query("SELECT to_regclass('survives_restart') AS t");
    expect(rows[0]?.t).toBe('survives_restart');
  });
});

describe('streaming standby', () => {
  it('follows the primary, is read-only, and accepts writes after promotion', async () => {
    const primary = await startCluster();
    const standby = await primary.createStandby();
    try {
      await primary.query('CREATE TABLE replicated (id int)');
      await primary.query('INSERT INTO replicated VALUES (1), (2)');
      await waitForReplay(primary, standby);

      const replicated = await standby.query('SELECT count(*)::int AS n FROM replicated');
      expect(replicated.rows[0]?.n).toBe(2);
      const recovery = await standby.query('SELECT pg_is_in_recovery() AS r');
      expect(recovery.rows[0]?.r).toBe(true);
      await expect(standby.query('INSERT INTO replicated VALUES (3)')).rejects.toMatchObject({
        code: '25006',
      });

      await standby.promote();
      await standby.query('INSERT INTO replicated VALUES (3)');
      const after = await standby.query('SELECT count(*)::int AS n FROM replicated');
      expect(after.rows[0]?.n).toBe(3);
    } finally {
      await Promise.all([standby.stop(), primary.stop()]);
    }
  });
});

describe('clean-up', () => {
  it('a standby that cannot be made leaves no folder behind', async () => {
    // wal_level=minimal refuses replication slots, so the standby fails half-way.
    const primary = await startCluster({ settings: { wal_level: 'minimal', max_wal_senders: 0 } });
    try {
      // Only this file makes standbys, and its tests run one at a time.
      const standbyFolders = () =>
        findLeftoverClusters(process.env.HOTLOAD_TEST_RUN_ID ?? 'adhoc').filter((c) =>
          c.dir.includes('-standby-'),
        );
      expect(standbyFolders()).toEqual([]);
      await expect(primary.createStandby()).rejects.toThrow(/replication slots|wal_level/);
      expect(standbyFolders()).toEqual([]);
    } finally {
      await primary.stop();
    }
  });

  it('stop() ends the server process and removes the temp folder', async () => {
    const cluster = await startCluster();
    const pid = cluster.pid!;
    expect(isAlive(pid)).toBe(true);
    expect(existsSync(cluster.runDir)).toBe(true);
    await cluster.stop();
    expect(isAlive(pid)).toBe(false);
    expect(existsSync(cluster.runDir)).toBe(false);
    await cluster.stop(); // idempotent
  });
});
