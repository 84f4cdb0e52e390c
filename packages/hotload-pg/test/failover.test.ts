/**
 * Host lists with target_session_attrs=read-write against a real primary and streaming
 * standby: host selection at verify time, and failover without a secret change.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool, type SwitchEvent, type VerifyFailedEvent } from 'hotload-pg';
import { nextEvent, type PostgresCluster, startCluster } from 'hotload-test-support';
import { describe, expect, it, onTestFinished } from 'vitest';

/**
 * A pool whose secret is a libpq URI with the host list `first,second` and
 * target_session_attrs=read-write (credentials: the primary's superuser, which the standby shares).
 */
function poolOnHostList(primary: PostgresCluster, first: PostgresCluster, second: PostgresCluster): Pool {
  const dir = mkdtempSync(join(tmpdir(), 'hotload-failover-'));
  const c = primary.connectionConfig();
  const auth = `${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}`;
  const hosts = `${first.host}:${first.port},${second.host}:${second.port}`;
  const dsnFile = join(dir, 'dsn');
  writeFileSync(dsnFile, `postgres://${auth}@${hosts}/${c.database}?target_session_attrs=read-write\n`);
  const pool = new Pool({
    hotload: { source: { dsnFile }, verifyRetryInitialMillis: 20, verifyRetryMaxMillis: 200 },
  });
  // As with pg.Pool, idle clients whose server goes away report it here.
  pool.on('error', () => {});
  onTestFinished(async () => {
    await pool.end();
    rmSync(dir, { recursive: true, force: true });
  });
  return pool;
}

/** Waits until the standby has replayed everything the primary wrote so far. */
async function waitForReplay(primary: PostgresCluster, standby: PostgresCluster): Promise<void> {
  const { rows } = await primary.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
  for (;;) {
    const replayed = await standby.query<{ caught_up: boolean }>(
      'SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS caught_up',
      [rows[0]?.lsn],
    );
    if (replayed.rows[0]?.caught_up) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function portOf(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ port: string }>("SELECT current_setting('port') AS port");
  return Number(rows[0]?.port);
}

describe('host list with target_session_attrs=read-write', () => {
  it('writes go to the primary; after failover the pool moves to the promoted standby by itself', async () => {
    const primary = await startCluster();
    const standby = await primary.createStandby();
    onTestFinished(async () => {
      await Promise.all([standby.stop(), primary.stop()]);
    });
    await primary.query('CREATE TABLE writes (id int)');
    const pool = poolOnHostList(primary, primary, standby);
    await pool.query('INSERT INTO writes VALUES (1)');
    expect(await portOf(pool)).toBe(primary.port);
    const first = pool.generation;
    await waitForReplay(primary, standby);

    const switched = nextEvent<SwitchEvent>(pool, 'switch', (e) => e.fromGeneration === first);
    await primary.shutdown('immediate');
    // The failure of this query is what tells the pool the primary is gone.
    await expect(pool.query('INSERT INTO writes VALUES (2)')).rejects.toThrow();
    await standby.promote();
    await switched;

    await pool.query('INSERT INTO writes VALUES (3)');
    expect(await portOf(pool)).toBe(standby.port);
    const { rows } = await pool.query<{ ids: number[] }>(
      'SELECT array_agg(id ORDER BY id) AS ids FROM writes',
    );
    expect(rows[0]?.ids).toEqual([1, 3]);
  });

  it('a list whose first host is a standby builds the generation on the writable second host', async () => {
    const primary = await startCluster();
    const standby = await primary.createStandby();
    onTestFinished(async () => {
      await Promise.all([standby.stop(), primary.stop()]);
    });
    const pool = poolOnHostList(primary, standby, primary);
    await pool.ready();
    expect(pool.options.port).toBe(primary.port);
    await pool.query('CREATE TABLE on_primary (id int)');
    expect(await portOf(pool)).toBe(primary.port);
  });

  it('a burst of 25006 errors (the primary turned read-only) triggers one re-selection', async () => {
    const primary = await startCluster();
    const standby = await primary.createStandby();
    onTestFinished(async () => {
      await Promise.all([standby.stop(), primary.stop()]);
    });
    await primary.query('CREATE TABLE writes (id int)');
    const pool = poolOnHostList(primary, primary, standby);
    await pool.query('INSERT INTO writes VALUES (1)');
    await waitForReplay(primary, standby);
    const first = pool.generation;
    const failed: VerifyFailedEvent[] = [];
    pool.on('verifyFailed', (event) => failed.push(event));

    // Demoted in place: every session of the old primary is now read-only, none is writable.
    await primary.query('ALTER SYSTEM SET default_transaction_read_only = on');
    await primary.query('SELECT pg_reload_conf()');
    await untilEverySessionReadOnly(pool);
    const retrying = nextEvent<VerifyFailedEvent>(pool, 'verifyFailed');
    const burst = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => pool.query('INSERT INTO writes VALUES ($1)', [100 + i])),
    );
    expect(
      burst.every((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === '25006'),
    ).toBe(true);
    await retrying; // neither host is writable yet: selection retries with backoff
    const switched = nextEvent<SwitchEvent>(pool, 'switch', (e) => e.fromGeneration === first);
    await standby.promote();
    const event = await switched;

    // One re-selection: a single run of attempts 1, 2, 3 ... that ended in the switch.
    expect(failed.map((e) => e.attempt)).toEqual(failed.map((_, i) => i + 1));
    expect(event.attempts).toBe(failed.length + 1);
    await pool.query('INSERT INTO writes VALUES (2)');
    expect(await portOf(pool)).toBe(standby.port);
  });
});

/**
 * pg_reload_conf() returns before the postmaster has signalled the backends, so an open
 * session may still accept a write. Holds every open session of the pool at once and
 * waits until each one reports the reloaded setting (there is no event for it).
 */
async function untilEverySessionReadOnly(pool: Pool): Promise<void> {
  const clients = await Promise.all(Array.from({ length: pool.totalCount }, () => pool.connect()));
  try {
    for (const client of clients) {
      while (
        (await client.query('SHOW default_transaction_read_only')).rows[0]?.default_transaction_read_only !==
        'on'
      ) {
        // the backend applies the reload before its next command: ask again
      }
    }
  } finally {
    for (const client of clients) client.release();
  }
}
