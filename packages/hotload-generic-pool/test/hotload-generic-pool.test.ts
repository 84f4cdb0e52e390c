import type genericPool from 'generic-pool';
import type { ClientFactory } from 'hotload-generic-pool';
import { type AppUser, nextEvent, useAppDatabases } from 'hotload-test-support';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgClientFactory } from '../../../test/contract/pg-client-factory.js';
import {
  backendPid,
  byFirstSeen,
  ended,
  hotloadGenericPool,
  type PoolSubject,
  plainGenericPool,
} from './pool-subjects.js';

describe('HotloadGenericPool where it replaces generic-pool: the same scenario on both', () => {
  const suite = useAppDatabases();

  /** Runs `scenario` on plain generic-pool, then on HotloadGenericPool; each pool is ended after. */
  async function onBoth<T>(
    scenario: (pool: PoolSubject) => Promise<T>,
    pool: genericPool.Options,
    factory?: ClientFactory<pg.Client>,
  ): Promise<{ plain: T; hotload: T }> {
    const options = {
      server: suite.clusters[0]!,
      user: 'app_a' as AppUser,
      password: suite.passwords.app_a,
      secretDirectory: suite.secret.path,
      pool,
      ...(factory ? { factory } : {}),
    };
    const run = async (subject: PoolSubject): Promise<T> => {
      let endedAlready = false;
      try {
        return await scenario({
          ...subject,
          end: () => {
            endedAlready = true;
            return subject.end();
          },
        });
      } finally {
        if (!endedAlready) await subject.end();
      }
    };
    const plain = await run(plainGenericPool(options));
    const hotload = await run(await hotloadGenericPool(options));
    return { plain, hotload };
  }

  it('serves checkouts beyond max from the clients given back, first come first served', async () => {
    const { plain, hotload } = await onBoth(
      async (pool) => {
        const first = await pool.acquire();
        const second = await pool.acquire();
        const order: string[] = [];
        const served = (name: string) => (client: pg.Client) => {
          order.push(name);
          return client;
        };
        const third = pool.acquire().then(served('third'));
        const fourth = pool.acquire().then(served('fourth'));
        const pids = [await backendPid(first), await backendPid(second)];
        await pool.release(second);
        const servedThird = await third;
        await pool.release(first);
        const servedFourth = await fourth;
        pids.push(await backendPid(servedThird), await backendPid(servedFourth));
        const users = await Promise.all(
          [servedThird, servedFourth].map(
            async (client) => (await client.query('SELECT session_user AS u')).rows[0]?.u,
          ),
        );
        await pool.release(servedThird);
        await pool.release(servedFourth);
        return { order, sessions: byFirstSeen(pids), users };
      },
      { max: 2 },
    );
    expect(plain).toEqual({
      order: ['third', 'fourth'],
      sessions: ['s1', 's2', 's2', 's1'],
      users: ['app_a', 'app_a'],
    });
    expect(hotload).toEqual(plain);
  });

  it('destroys a client given back with an error: the next checkout is a new session', async () => {
    const { plain, hotload } = await onBoth(
      async (pool) => {
        const broken = await pool.acquire();
        const pids = [await backendPid(broken)];
        const closed = ended(broken);
        await pool.release(broken, new Error('the program saw this connection fail'));
        await closed;
        const next = await pool.acquire();
        pids.push(await backendPid(next));
        await pool.release(next);
        const again = await pool.acquire();
        pids.push(await backendPid(again));
        await pool.release(again);
        return { sessions: byFirstSeen(pids), sameClientReused: next === again };
      },
      { max: 1 },
    );
    expect(plain).toEqual({ sessions: ['s1', 's2', 's2'], sameClientReused: true });
    expect(hotload).toEqual(plain);
  });

  it('drops a client that fails validation (testOnBorrow) and opens a new one', async () => {
    const rejected = new WeakSet<pg.Client>();
    const validating: ClientFactory<pg.Client> = {
      ...pgClientFactory,
      validate: async (client) => !rejected.has(client),
    };
    const { plain, hotload } = await onBoth(
      async (pool) => {
        const first = await pool.acquire();
        const pids = [await backendPid(first)];
        rejected.add(first);
        const closed = ended(first);
        await pool.release(first);
        const second = await pool.acquire();
        await closed;
        pids.push(await backendPid(second));
        await pool.release(second);
        return { sessions: byFirstSeen(pids), replaced: second !== first };
      },
      { max: 1, testOnBorrow: true },
      validating,
    );
    expect(plain).toEqual({ sessions: ['s1', 's2'], replaced: true });
    expect(hotload).toEqual(plain);
  });

  it('ends once the client in use came back, closing it', async () => {
    const { plain, hotload } = await onBoth(
      async (pool) => {
        const held = await pool.acquire();
        const steps: string[] = [];
        const closed = ended(held);
        const ending = pool.end().then(() => steps.push('ended'));
        // The holder still works, and the pool has not ended under it.
        steps.push(`queried ${(await held.query('SELECT 1 AS one')).rows[0]?.one}`);
        await pool.release(held);
        steps.push('released');
        await ending;
        await closed;
        return steps;
      },
      { max: 2 },
    );
    expect(plain).toEqual(['queried 1', 'released', 'ended']);
    expect(hotload).toEqual(plain);
  });
});

describe('HotloadGenericPool across a rotation (what generic-pool alone cannot do)', () => {
  const suite = useAppDatabases();

  it('moves new checkouts to the new secret; a client held across the switch keeps working and is destroyed when given back', async () => {
    const subject = await hotloadGenericPool({
      server: suite.clusters[0]!,
      user: 'app_a',
      password: suite.passwords.app_a,
      secretDirectory: suite.secret.path,
      pool: { max: 2 },
    });
    const pool = subject.hotload;
    try {
      const held = await pool.acquire();
      const switched = nextEvent<{ toGeneration: number }>(pool.hotload, 'switch');
      await suite.rotateOnServer('app_b');
      await suite.publish(suite.clusters[0]!, 'app_b');
      await switched;
      const fresh = await pool.acquire();
      const user = async (client: pg.Client) => (await client.query('SELECT session_user AS u')).rows[0]?.u;
      expect([await user(held), await user(fresh)]).toEqual(['app_a', 'app_b']);
      const heldClosed = ended(held);
      const drained = nextEvent(pool.hotload, 'drained');
      await pool.release(held);
      await heldClosed;
      await drained;
      await pool.release(fresh);
      // The new generation's client is kept: the next checkout is the same one.
      const again = await pool.acquire();
      expect(again).toBe(fresh);
      await pool.release(again);
    } finally {
      await pool.end();
    }
  });

  it('a login refused for its credentials waits for the new secret and checks out there', async () => {
    const refusedLogins: Error[] = [];
    let refused: () => void = () => {};
    const wasRefused = new Promise<void>((resolve) => (refused = resolve));
    const observed: ClientFactory<pg.Client> = {
      ...pgClientFactory,
      create: async (config, host, signal) => {
        try {
          return await pgClientFactory.create(config, host, signal);
        } catch (error) {
          refusedLogins.push(error as Error);
          refused();
          throw error;
        }
      },
    };
    const current: AppUser = 'app_b';
    await suite.publish(suite.clusters[0]!, current);
    const subject = await hotloadGenericPool({
      server: suite.clusters[0]!,
      user: current,
      password: suite.passwords[current],
      secretDirectory: suite.secret.path,
      pool: { max: 1 },
      factory: observed,
      hotload: { credentialWaitMillis: 60_000 },
    });
    const pool = subject.hotload;
    try {
      // The first generation serves unverified: no connection yet. The password changes
      // on the server first, so the checkout's login is refused.
      await suite.rotateOnServer(current);
      const first = pool.hotload.generation;
      const checkout = pool.acquire();
      await wasRefused;
      expect(refusedLogins[0]).toMatchObject({ code: '28P01' });
      await suite.publish(suite.clusters[0]!, current);
      const client = await checkout;
      expect((await client.query('SELECT session_user AS u')).rows[0]?.u).toBe(current);
      expect(pool.hotload.generation).toBe(first! + 1);
      await pool.release(client);
    } finally {
      await pool.end();
    }
  });
});
