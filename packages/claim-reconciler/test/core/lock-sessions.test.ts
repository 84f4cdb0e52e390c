/**
 * Claim advisory locks on kept sessions (`lock-sessions.ts`) against a real PostgreSQL: a
 * released lock's session serves the next claim, the lock is free in between (also after
 * the work failed), a kept session the server ended is replaced without an error, a
 * rotated master password retires the kept sessions, and closing ends them.
 */
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { nextEvent } from 'hotload-test-support';
import { tempDir, useReconcilerCluster } from 'hotload-test-support/claims';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { ADVISORY_LOCK_NAMESPACE, MasterConnection } from '../../src/core/master-connection.js';

const suite = useReconcilerCluster();

describe('claim lock sessions', () => {
  let master: MasterConnection | undefined;
  let observer: pg.Client | undefined;
  let masterClosed = false;

  afterEach(async () => {
    if (!masterClosed) await master?.close();
    await observer?.end();
    master = observer = undefined;
    masterClosed = false;
  });

  async function setUp() {
    const [label, fragment] = [...suite.config.fragmentKeys][0]!;
    master = new MasterConnection({ label, host: fragment.host, port: fragment.port, fragment }, 2);
    observer = new pg.Client(suite.cluster.connectionConfig());
    await observer.connect();
    return { master, observer };
  }

  /** Whether another session can take the claim lock `name` now (taking and freeing it). */
  async function lockIsFree(observer: pg.Client, name: string): Promise<boolean> {
    const { rows } = await observer.query<{ taken: boolean }>(
      'SELECT pg_try_advisory_lock(hashtext($1), hashtext($2)) AS taken',
      [ADVISORY_LOCK_NAMESPACE, name],
    );
    if (rows[0]?.taken)
      await observer.query('SELECT pg_advisory_unlock(hashtext($1), hashtext($2))', [
        ADVISORY_LOCK_NAMESPACE,
        name,
      ]);
    return rows[0]?.taken === true;
  }

  /** The backend pid of the session holding the claim lock `name`, seen from `observer`. */
  async function holderOf(observer: pg.Client, name: string): Promise<number | undefined> {
    const { rows } = await observer.query<{ pid: number }>(
      `SELECT l.pid FROM pg_locks l
        WHERE l.locktype = 'advisory' AND l.granted
          AND l.classid::int = hashtext($1) AND l.objid::int = hashtext($2)`,
      [ADVISORY_LOCK_NAMESPACE, name],
    );
    return rows[0]?.pid;
  }

  it('serve the next claim from the session of the released lock, the lock free in between', async () => {
    const { master, observer } = await setUp();
    const first = await master.withAdvisoryLock('claim-users:one', async () => {
      expect(await lockIsFree(observer, 'claim-users:one')).toBe(false);
      return holderOf(observer, 'claim-users:one');
    });
    expect(first).toBeTypeOf('number');
    expect(await lockIsFree(observer, 'claim-users:one')).toBe(true);
    const second = await master.withAdvisoryLock('claim-users:two', () =>
      holderOf(observer, 'claim-users:two'),
    );
    expect(second).toBe(first);
  });

  it('release the lock when the work fails, and keep serving', async () => {
    const { master, observer } = await setUp();
    const failed = await master
      .withAdvisoryLock('claim-users:fails', async () => {
        throw new Error('work failed');
      })
      .catch((error: Error) => error.message);
    expect(failed).toBe('work failed');
    expect(await lockIsFree(observer, 'claim-users:fails')).toBe(true);
    expect(await master.withAdvisoryLock('claim-users:fails', async () => 'done')).toBe('done');
  });

  it('replace a kept session the server ended, without an error', async () => {
    const { master, observer } = await setUp();
    const kept = await master.withAdvisoryLock('claim-users:kept', () =>
      holderOf(observer, 'claim-users:kept'),
    );
    const { rows } = await observer.query<{ ended: boolean }>(
      'SELECT pg_terminate_backend($1, 10000) AS ended',
      [kept],
    );
    expect(rows[0]?.ended).toBe(true);
    const next = await master.withAdvisoryLock('claim-users:kept', () =>
      holderOf(observer, 'claim-users:kept'),
    );
    expect(next).toBeTypeOf('number');
    expect(next).not.toBe(kept);
  });

  it('retire the kept sessions when the master password is rotated', async () => {
    const { observer } = await setUp();
    const work = await tempDir('lock-rotation-');
    try {
      const secret = new AtomicSecretWriter(join(work.path, 'master'));
      await secret.write({ password: 'first-lock-master-1' });
      await suite.cluster.query("CREATE ROLE lock_rotating SUPERUSER LOGIN PASSWORD 'first-lock-master-1'");
      const [label, base] = [...suite.config.fragmentKeys][0]!;
      const fragment = {
        ...base,
        username: 'lock_rotating',
        password: { kind: 'file' as const, path: join(work.path, 'master', 'password') },
      };
      await master?.close();
      master = new MasterConnection({ label, host: fragment.host, port: fragment.port, fragment }, 2);
      await master.query('SELECT 1');
      const before = await master.withAdvisoryLock('claim-users:rotation', () =>
        holderOf(observer, 'claim-users:rotation'),
      );
      const switched = nextEvent(master.pool, 'switch');
      await suite.cluster.query("ALTER ROLE lock_rotating PASSWORD 'second-lock-master-2'");
      await secret.write({ password: 'second-lock-master-2' });
      await switched;
      const after = await master.withAdvisoryLock('claim-users:rotation', () =>
        holderOf(observer, 'claim-users:rotation'),
      );
      expect(after).toBeTypeOf('number');
      expect(after).not.toBe(before);
    } finally {
      await master?.close();
      masterClosed = true;
      await suite.cluster.query('DROP ROLE lock_rotating');
      await work.cleanup();
    }
  });

  it('end the kept sessions on close', async () => {
    const { master, observer } = await setUp();
    const kept = await master.withAdvisoryLock('claim-users:closing', () =>
      holderOf(observer, 'claim-users:closing'),
    );
    const alive = async () =>
      (await observer.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [kept])).rowCount === 1;
    expect(await alive()).toBe(true);
    await master.close();
    masterClosed = true;
    // The server removes a backend from pg_stat_activity once its client's goodbye was read.
    for (let seen = 0; await alive(); seen++) {
      expect(seen).toBeLessThan(1000);
      await observer.query('SELECT pg_sleep(0.01)');
    }
  });
});
