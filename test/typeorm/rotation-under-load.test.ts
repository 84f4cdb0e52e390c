/**
 * TypeORM on hotload-pg under continuous load while the password rotates and the login
 * user switches: no failed query, and no session of a previous user once drained.
 */

import { hotloadTypeOrmOptions } from 'hotload-pg';
import {
  type AppUser,
  findLeaks,
  newPassword,
  type PostgresCluster,
  sessionsOfAfterExit,
  setPassword,
  useAppDatabases,
} from 'hotload-test-support';
import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { ItemEntity } from './item.js';
import { hotloadPoolOf, nextPoolEvent, TypeOrmLoad } from './typeorm-helpers.js';

const WORKERS = 4;

describe('TypeORM on hotload-pg under load while credentials rotate', () => {
  const { secret, passwords, clusters } = useAppDatabases();
  let cluster: PostgresCluster;
  beforeAll(() => {
    cluster = clusters[0]!;
  });

  it('fails no query across password rotations and login-user switches, and leaves no old session', async () => {
    const dataSource = new DataSource({
      ...hotloadTypeOrmOptions({ secretDirectory: secret.path }),
      poolSize: WORKERS,
      entities: [ItemEntity],
    });
    await dataSource.initialize();
    const pool = hotloadPoolOf(dataSource);
    const events: unknown[] = [];
    for (const name of ['switch', 'verifyFailed', 'drained', 'forceClosed', 'sourceError'] as const) {
      pool.on(name, (event: unknown) => events.push({ name, event }));
    }
    const everyPassword: string[] = [passwords.app_a, passwords.app_b];
    const load = new TypeOrmLoad(dataSource, WORKERS);
    try {
      await load.moreSucceeded(50);
      let active: AppUser = 'app_a';
      const steps: Array<'rotate' | 'switch'> = ['switch', 'rotate', 'switch', 'switch', 'rotate'];
      for (const step of steps) {
        const previousUser: AppUser = active;
        if (step === 'switch') active = active === 'app_a' ? 'app_b' : 'app_a';
        const password = newPassword();
        everyPassword.push(password);
        // A same-user rotation changes the server first: a connection being opened in
        // between would fail as it would for any client, so rotate on a full pool.
        for (let i = 0; i < 1000 && pool.totalCount < WORKERS; i++)
          await new Promise((r) => setTimeout(r, 5));
        await setPassword(cluster, active, password);
        const switched = nextPoolEvent(pool, 'switch');
        await secret.write(cluster, active, password);
        const { fromGeneration } = await switched;
        await nextPoolEvent(pool, 'drained', (event) => event.generation === fromGeneration);
        await load.moreSucceeded(50);
        const [{ user }] = await dataSource.query('SELECT session_user AS user');
        expect(user).toBe(active);
        if (previousUser !== active) expect(await sessionsOfAfterExit(cluster, previousUser)).toBe(0);
      }
    } finally {
      await load.stop();
      await dataSource.destroy();
    }
    expect(load.failures).toEqual([]);
    expect(load.succeeded).toBeGreaterThan(0);
    expect(findLeaks(events, everyPassword)).toEqual([]);
    expect(await sessionsOfAfterExit(cluster, 'app_a')).toBe(0);
    expect(await sessionsOfAfterExit(cluster, 'app_b')).toBe(0);
  });
});
