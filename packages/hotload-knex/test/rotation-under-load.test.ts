import { createHotloadKnex, type HotloadKnex, type SwitchEvent } from 'hotload-knex';
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
import { beforeAll, describe, expect, it } from 'vitest';
import { QueryLoad, recordEvents } from './knex-helpers.js';

const WORKERS = 4;

/** The members of Knex's tarn pool these tests read (its public counters and events). */
interface TarnPool {
  numPendingCreates(): number;
  numUsed(): number;
  numFree(): number;
  on(event: string, listener: (payload: unknown) => void): unknown;
  removeListener(event: string, listener: (payload: unknown) => void): unknown;
}

const tarnPoolOf = (db: HotloadKnex) => db.client.pool as unknown as TarnPool;

describe('Knex under load while credentials rotate', () => {
  const suite = useAppDatabases();
  const { secret, clusters, everyPassword } = suite;
  let cluster: PostgresCluster;
  beforeAll(() => {
    cluster = clusters[0]!;
  });

  /** One rotation to `user` (see `rotate` of the suite), checking the new generation serves it. */
  async function rotate(
    db: HotloadKnex,
    server: ServerAddress,
    user: AppUser,
    betweenServerAndSecret?: () => void,
  ): Promise<void> {
    const driver: RotatingDriver<SwitchEvent> = {
      events: db.hotload,
      currentGeneration: () => db.hotload.generation,
      retiredBy: (switched) => switched.fromGeneration,
    };
    const switched = await suite.rotate(driver, server, user, betweenServerAndSecret);
    expect(switched.user).toBe(user);
    expect(db.hotload.generation).toBe(switched.toGeneration);
  }

  it('fails no query across password rotations and login-user switches, and leaves no old session', async () => {
    const db: HotloadKnex = await createHotloadKnex({
      hotload: { source: { secretDirectory: secret.path } },
      pool: { min: 0, max: WORKERS },
    });
    const events = recordEvents(db.hotload);
    const load = new QueryLoad(db, WORKERS);
    try {
      await load.moreSucceeded(50);
      let active: AppUser = 'app_a';
      // Each step: either a rotation of the active user's password, or a switch to the
      // other user with a fresh password (what the claim reconciler does).
      const steps: Array<'rotate' | 'switch'> = ['rotate', 'switch', 'switch', 'rotate', 'switch'];
      for (const step of steps) {
        const previousUser: AppUser = active;
        if (step === 'switch') active = active === 'app_a' ? 'app_b' : 'app_a';
        // A same-user rotation on a full pool that opens no more connections; the case of
        // a pool still opening connections is the next test.
        await steadyPool(db);
        await rotate(db, cluster, active);
        await load.moreSucceeded(50);
        if (previousUser !== active) expect(await sessionsOfAfterExit(cluster, previousUser)).toBe(0);
      }
    } finally {
      await load.stop();
      await db.destroy();
    }
    expect(load.failures).toEqual([]);
    expect(load.succeeded).toBeGreaterThan(0);
    expect(findLeaks(events, everyPassword)).toEqual([]);
    expect(await sessionsOfAfterExit(cluster, 'app_a')).toBe(0);
    expect(await sessionsOfAfterExit(cluster, 'app_b')).toBe(0);
  });

  // The server changes first, so a connection still opening with the old password is
  // refused (28P01); Knex would fail the query waiting for it (tarn's propagateCreateError).
  // The refused login waits (credentialWaitMillis) for the new secret's generation instead.
  it('fails no query when the password rotates while the pool is still opening connections', async () => {
    // Every byte to and from the server is delayed, so each connection takes a few hundred
    // ms to open: the rotation lands while the pool is opening its connections.
    const proxy = await FaultProxy.start({ host: cluster.host, port: cluster.port });
    await suite.publish(proxy, 'app_a');
    const db: HotloadKnex = await createHotloadKnex({
      hotload: { source: { secretDirectory: secret.path } },
      pool: { min: 0, max: WORKERS },
    });
    const events = recordEvents(db.hotload);
    let load: QueryLoad | undefined;
    try {
      const pool = tarnPoolOf(db);
      proxy.setLatency(100);
      load = new QueryLoad(db, WORKERS);
      await untilHolds(
        pool,
        'createRequest',
        () => pool.numPendingCreates() > 0,
        'the pool opening connections',
      );
      await rotate(db, proxy, 'app_a', () => expect(pool.numPendingCreates()).toBeGreaterThan(0));
      proxy.setLatency(0);
      await load.moreSucceeded(50);
    } finally {
      await load?.stop();
      await db.destroy();
      await proxy.close();
      await suite.publish(cluster, 'app_a');
    }
    expect(load?.failures).toEqual([]);
    expect(findLeaks(events, everyPassword)).toEqual([]);
  });
});

/**
 * Resolves once the pool holds its full `WORKERS` connections and opens none (with `max`
 * equal to the workers, it then opens no more); fails, naming the state, if it never does.
 */
async function steadyPool(db: HotloadKnex): Promise<void> {
  const pool = tarnPoolOf(db);
  const steady = () => pool.numPendingCreates() === 0 && pool.numUsed() + pool.numFree() === WORKERS;
  await untilHolds(pool, 'createSuccess', steady, `a steady pool of ${WORKERS} connections`);
}
