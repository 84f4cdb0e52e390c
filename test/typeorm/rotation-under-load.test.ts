/**
 * TypeORM on hotload-pg under continuous load while the password rotates and the login
 * user switches: no failed query, and no session made with an old config once drained.
 */

import { hotloadTypeOrmOptions, type Pool, type SwitchEvent } from 'hotload-pg';
import {
  type AppUser,
  FaultProxy,
  findLeaks,
  type PostgresCluster,
  type RotatingDriver,
  type ServerAddress,
  sessionsOfAfterExit,
  untilHolds,
  useAppDatabases,
} from 'hotload-test-support';
import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it } from 'vitest';
import { ItemEntity } from './item.js';
import { hotloadPoolOf, TypeOrmLoad } from './typeorm-helpers.js';

const WORKERS = 4;

describe('TypeORM on hotload-pg under load while credentials rotate', () => {
  const suite = useAppDatabases();
  const { secret, clusters, everyPassword } = suite;
  let cluster: PostgresCluster;
  beforeAll(() => {
    cluster = clusters[0]!;
  });

  /** A DataSource on the watched secret, and every hotload event of its pool (to scan for secrets). */
  async function openDataSource(): Promise<{ dataSource: DataSource; pool: Pool; events: unknown[] }> {
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
    return { dataSource, pool, events };
  }

  /** One rotation to `user` (see `rotate` of the suite). */
  async function rotate(
    pool: Pool,
    server: ServerAddress,
    user: AppUser,
    betweenServerAndSecret?: () => void,
  ): Promise<void> {
    const driver: RotatingDriver<SwitchEvent> = {
      events: pool,
      currentGeneration: () => pool.generation,
      retiredBy: (switched) => switched.fromGeneration,
    };
    await suite.rotate(driver, server, user, betweenServerAndSecret);
  }

  it('fails no query across password rotations and login-user switches, and leaves no old session', async () => {
    const { dataSource, pool, events } = await openDataSource();
    const connected = connectedClients(pool);
    const load = new TypeOrmLoad(dataSource, WORKERS);
    try {
      await load.moreSucceeded(50);
      let active: AppUser = 'app_a';
      const steps: Array<'rotate' | 'switch'> = ['switch', 'rotate', 'switch', 'switch', 'rotate'];
      for (const step of steps) {
        const previousUser: AppUser = active;
        if (step === 'switch') active = active === 'app_a' ? 'app_b' : 'app_a';
        // A same-user rotation on a full pool that opens no more clients; the case of a
        // pool still opening clients is the next test.
        const steady = () => connected() === WORKERS && pool.totalCount === WORKERS;
        await untilHolds(pool, 'connect', steady, `a steady pool of ${WORKERS} connected clients`);
        await rotate(pool, cluster, active);
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

  // The server changes first, so a client still connecting with the old password may be
  // refused: hotload-pg keeps the request queued for the clients the generation already
  // has (and the next generation), instead of failing it as pg.Pool would.
  it('fails no query when the password rotates while the pool is still opening clients', async () => {
    // Every byte is delayed, so each client takes a few hundred ms to connect.
    const proxy = await FaultProxy.start({ host: cluster.host, port: cluster.port });
    await suite.publish(proxy, 'app_a');
    const { dataSource, pool, events } = await openDataSource();
    let load: TypeOrmLoad | undefined;
    try {
      const connected = connectedClients(pool);
      const connecting = () => pool.totalCount > connected();
      proxy.setLatency(100);
      load = new TypeOrmLoad(dataSource, WORKERS);
      // the first client is idle: its checkout starts the load, the others connect
      await untilHolds(pool, 'acquire', connecting, 'the pool opening clients');
      await rotate(pool, proxy, 'app_a', () => expect(connecting()).toBe(true));
      proxy.setLatency(0);
      await load.moreSucceeded(50);
    } finally {
      await load?.stop();
      await dataSource.destroy();
      await proxy.close();
      await suite.publish(cluster, 'app_a');
    }
    expect(load.failures).toEqual([]);
    expect(findLeaks(events, everyPassword)).toEqual([]);
  });
});

/**
 * Clients of `pool` that are connected ('connect' minus 'remove', forwarded from every
 * generation), counting from now; the pool's clients are all connected when it is called.
 */
function connectedClients(pool: Pool): () => number {
  let connected = pool.totalCount;
  pool.on('connect', () => connected++);
  pool.on('remove', () => connected--);
  return () => connected;
}
