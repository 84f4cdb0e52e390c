/**
 * TypeORM on hotload-pg across switches: a QueryRunner transaction open across a switch
 * commits, a move to a second server under load fails no query, and
 * `dataSource.destroy()` closes every generation.
 */

import { hotloadTypeOrmOptions } from 'hotload-pg';
import {
  type AppUser,
  newPassword,
  nextSwitchDrained,
  type PostgresCluster,
  sessionsOf,
  sessionsOfAfterExit,
  setPassword,
  useAppDatabases,
} from 'hotload-test-support';
import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { ItemEntity } from './item.js';
import { hotloadPoolOf, nextPoolEvent, TypeOrmLoad } from './typeorm-helpers.js';

describe('TypeORM on hotload-pg across switches', () => {
  const { secret, passwords, clusters } = useAppDatabases(2);
  let first: PostgresCluster;
  let second: PostgresCluster;
  let active: AppUser = 'app_a';

  /** Switches the secret (on `cluster`) to the other login user with a fresh password. */
  async function switchUser(cluster: PostgresCluster): Promise<AppUser> {
    active = active === 'app_a' ? 'app_b' : 'app_a';
    passwords[active] = newPassword();
    await setPassword(cluster, active, passwords[active]);
    await secret.write(cluster, active, passwords[active]);
    return active;
  }

  function createDataSource(): DataSource {
    return new DataSource({
      ...hotloadTypeOrmOptions({ secretDirectory: secret.path }),
      entities: [ItemEntity],
    });
  }

  beforeAll(() => {
    [first, second] = clusters as [PostgresCluster, PostgresCluster];
  });

  it('commits a QueryRunner transaction that was open across a switch', async () => {
    await secret.write(first, active, passwords[active]);
    const dataSource = await createDataSource().initialize();
    const pool = hotloadPoolOf(dataSource);
    try {
      const before = active;
      const runner = dataSource.createQueryRunner();
      await runner.connect();
      await runner.startTransaction();
      await runner.manager.insert(ItemEntity, { note: 'runner-before-switch' });
      let drainedBeforeCommit = false;
      const switched = nextPoolEvent(pool, 'switch');
      const after = await switchUser(first);
      const { fromGeneration } = await switched;
      const drained = nextPoolEvent(pool, 'drained', (event) => event.generation === fromGeneration).then(
        () => {
          drainedBeforeCommit = runner.isTransactionActive;
        },
      );
      // New work runs as the new user while the open transaction stays on the old one.
      expect((await dataSource.query('SELECT session_user AS u'))[0].u).toBe(after);
      expect((await runner.query('SELECT session_user AS u'))[0].u).toBe(before);
      await runner.manager.insert(ItemEntity, { note: 'runner-after-switch' });
      await runner.commitTransaction();
      await runner.release();
      await drained;
      expect(drainedBeforeCommit).toBe(false);
      const notes = (await dataSource.getRepository(ItemEntity).findBy({})).map((item) => item.note);
      expect(notes).toEqual(expect.arrayContaining(['runner-before-switch', 'runner-after-switch']));
      expect(await sessionsOfAfterExit(first, before)).toBe(0);
    } finally {
      await dataSource.destroy();
    }
  });

  it('closes every generation on dataSource.destroy()', async () => {
    await secret.write(first, active, passwords[active]);
    const dataSource = await createDataSource().initialize();
    const pool = hotloadPoolOf(dataSource);
    const before = active;
    const runner = dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    const switched = nextPoolEvent(pool, 'switch');
    const after = await switchUser(first);
    await switched;
    await dataSource.query('SELECT 1');
    // Both generations hold a session now (the old one in an open transaction). TypeORM's
    // destroy() releases its query runners, then ends the pool: every generation.
    expect(await sessionsOf(first, before)).toBeGreaterThan(0);
    expect(await sessionsOf(first, after)).toBeGreaterThan(0);
    await dataSource.destroy();
    expect(runner.isReleased).toBe(true);
    expect(await sessionsOfAfterExit(first, before)).toBe(0);
    expect(await sessionsOfAfterExit(first, after)).toBe(0);
  });

  it('moves under load to a second server without a failed query, leaving no session on the first', async () => {
    await secret.write(first, active, passwords[active]);
    const dataSource = await createDataSource().initialize();
    const pool = hotloadPoolOf(dataSource);
    const load = new TypeOrmLoad(dataSource, 4);
    try {
      await load.moreSucceeded(50);
      // The database moved with its users: same credentials on the second server.
      await setPassword(second, active, passwords[active]);
      const drained = nextSwitchDrained<{ fromGeneration?: number }>(pool);
      await secret.write(second, active, passwords[active]);
      await drained;
      await load.moreSucceeded(50);
      expect(await sessionsOfAfterExit(first, active)).toBe(0);
      expect(await sessionsOf(second, active)).toBeGreaterThan(0);
    } finally {
      await load.stop();
      await dataSource.destroy();
    }
    expect(load.failures).toEqual([]);
    const { rows } = await second.query<{ n: string }>('SELECT count(*) AS n FROM items', [], 'appdb');
    expect(Number(rows[0]?.n)).toBeGreaterThan(0);
  });
});
