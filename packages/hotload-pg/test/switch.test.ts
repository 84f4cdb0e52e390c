/**
 * Generation switching against real PostgreSQL, driven by `pool.switchTo(config)` (the
 * same path a source change takes, without the file watcher).
 */
import {
  ForceClosedError,
  type HotloadOptions,
  Pool,
  type SwitchEvent,
  type VerifyFailedEvent,
} from 'hotload-pg';
import { FaultProxy, nextEvent, type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { clientClassWrapping, configFor, createRole, settledSessions } from './helpers.js';

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startCluster();
  await createRole(cluster, 'app_a', 'pw_a_1');
  await createRole(cluster, 'app_b', 'pw_b_1');
  await cluster.query('GRANT pg_read_all_stats TO app_a, app_b');
});
afterAll(async () => {
  await cluster?.stop();
});

/** A pool on the `hotload` path (no source; switches come from switchTo). */
function poolFor(
  user: string,
  password: string,
  options: pg.PoolConfig & { drainTimeoutMillis?: number } = {},
) {
  const { drainTimeoutMillis, ...pgOptions } = options;
  const pool = new Pool({
    ...cluster.connectionConfig({ user, password }),
    ...pgOptions,
    hotload: { drainTimeoutMillis, verifyRetryInitialMillis: 20, verifyRetryMaxMillis: 200 },
  });
  const events: unknown[] = [];
  for (const name of ['switch', 'verifyFailed', 'drained', 'forceClosed', 'sourceError'] as const) {
    pool.on(name, (event: unknown) => events.push(event));
  }
  // A failed test must not leave sessions behind for the next one (a second end() rejects, as pg's does).
  onTestFinished(async () => {
    if (!pool.ending) await pool.end();
  });
  return { pool, events };
}

/**
 * A pg.Client class whose `end()` can be held (as a slow socket close would), for the
 * moment between pg-pool dropping a client and that client having closed.
 */
class HeldCloses {
  #held: Array<() => void> | undefined;

  hold(): void {
    this.#held ??= [];
  }

  release(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const end of held) end();
  }

  clientClass(): typeof pg.Client {
    return clientClassWrapping('end', (end, callback) => {
      if (this.#held === undefined) return end(callback);
      this.#held.push(() => end(callback));
      return undefined;
    });
  }
}

/** Runs `SELECT` in `concurrency` loops until `stop()`; counts successes and failures. */
function load(pool: Pool, concurrency: number) {
  let running = true;
  const stats = { ok: 0, failed: [] as Error[] };
  const loops = Array.from({ length: concurrency }, async () => {
    while (running) {
      try {
        await pool.query('SELECT current_user, pg_sleep(0.001)');
        stats.ok++;
      } catch (error) {
        stats.failed.push(error as Error);
      }
    }
  });
  return {
    stats,
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return stats;
    },
  };
}

describe('password rotation', () => {
  it('rotates under concurrent load without a failed query; new connections use the new password', async () => {
    const { pool, events } = poolFor('app_a', 'pw_a_1', { max: 4 });
    // Without a source, a login refused while the pool still grows fails as with pg.Pool
    // (see 'database ahead of the secret'): each password changes only once the serving
    // generation has all its connections (the load needs max of them).
    const connected = new Set<pg.PoolClient>();
    pool.on('connect', (client) => connected.add(client));
    pool.on('remove', (client) => connected.delete(client));
    const grown = async () => {
      while (connected.size < 4) await nextEvent(pool, 'connect');
    };
    const traffic = load(pool, 8);
    for (let round = 2; round <= 6; round++) {
      const password = `pw_a_${round}`;
      await grown();
      await cluster.query(`ALTER ROLE app_a PASSWORD '${password}'`);
      const drained = nextEvent(pool, 'drained');
      const switched = await pool.switchTo(
        configFor(cluster, { user: 'app_a', password, applicationName: `rotation-${round}` }),
      );
      expect(switched).toBe(true);
      await drained;
    }
    const stats = await traffic.stop();
    expect(stats.failed).toEqual([]);
    expect(stats.ok).toBeGreaterThan(0);
    // Only the last generation's sessions remain, and the old password no longer works.
    const appA = (all: Array<{ usename: string; application_name: string }>) =>
      all.filter((s) => s.usename === 'app_a');
    const onlyLast = (all: Array<{ usename: string; application_name: string }>) =>
      appA(all).every((s) => s.application_name === 'rotation-6');
    const left = appA(await settledSessions(cluster, onlyLast));
    expect(left.length).toBeGreaterThan(0);
    expect(new Set(left.map((s) => s.application_name))).toEqual(new Set(['rotation-6']));
    // Those sessions logged in with pw_a_6: the previous password is refused by now.
    const withOldPassword = new pg.Client(cluster.connectionConfig({ user: 'app_a', password: 'pw_a_5' }));
    await expect(withOldPassword.connect()).rejects.toMatchObject({ code: '28P01' });
    const text = JSON.stringify(events);
    for (let round = 1; round <= 6; round++) expect(text).not.toContain(`pw_a_${round}`);
    expect(events.filter((e) => (e as SwitchEvent).toGeneration !== undefined)).toHaveLength(5);
    await pool.end();
  });
});

describe('login-role switch', () => {
  it('moves from app_a to app_b; after the drain no app_a session remains', async () => {
    await cluster.query("ALTER ROLE app_a PASSWORD 'role_a'");
    await cluster.query("ALTER ROLE app_b PASSWORD 'role_b'");
    const { pool } = poolFor('app_a', 'role_a', { max: 3 });
    const traffic = load(pool, 6);
    await nextEvent(pool, 'acquire'); // some work on app_a first
    const drained = nextEvent(pool, 'drained');
    await pool.switchTo(configFor(cluster, { user: 'app_b', password: 'role_b' }));
    await drained;
    const stats = await traffic.stop();
    expect(stats.failed).toEqual([]);
    const noAppA = (all: Array<{ usename: string }>) => !all.some((s) => s.usename === 'app_a');
    const users = new Set((await settledSessions(cluster, noAppA)).map((s) => s.usename));
    expect(users.has('app_a')).toBe(false);
    expect(users.has('app_b')).toBe(true);
    expect((await pool.query('SELECT current_user AS u')).rows).toEqual([{ u: 'app_b' }]);
    await pool.end();
  });
});

describe('waiters and transactions', () => {
  it('serves a checkout that waits at switch time from the new generation', async () => {
    const { pool } = poolFor('postgres', cluster.superuserPassword, { max: 1 });
    const held = await pool.connect();
    const waiting = pool.connect();
    expect(pool.waitingCount).toBe(1);
    await pool.switchTo(configFor(cluster, { applicationName: 'next-generation' }));
    const served = await waiting;
    const app = await served.query('SHOW application_name');
    expect(app.rows[0].application_name).toBe('next-generation');
    served.release();
    held.release();
    await pool.end();
  });

  it('still counts checkouts right after pg-pool retired an idle client by its lifetime (its own acquire and release)', async () => {
    // pg-pool acquires and releases an idle client past maxLifetimeSeconds itself: that
    // release is not one of the pool's checkouts given back. Counted as one, the pool
    // would think it had room for a second checkout beside `held`, ask the old
    // generation's pg-pool for it, and the waiter would stay there across the switch.
    const { pool } = poolFor('postgres', cluster.superuserPassword, { max: 1, maxLifetimeSeconds: 1 });
    const removed = nextEvent(pool, 'remove');
    (await pool.connect()).release();
    await removed;
    const held = await pool.connect();
    const waiting = pool.connect();
    expect(pool.waitingCount).toBe(1);
    await pool.switchTo(configFor(cluster, { applicationName: 'after-lifetime' }));
    const served = await waiting;
    const app = await served.query('SHOW application_name');
    expect(app.rows[0].application_name).toBe('after-lifetime');
    served.release();
    held.release();
    await pool.end();
  });

  it('serves a checkout pg-pool holds for a client it does not reuse, even if a switch drains that pool meanwhile', async () => {
    // max 1, maxUses 1: the released client is closed, not reused, and the waiting
    // checkout (already handed to the generation's pg-pool) waits for that close. The
    // close is held past the switch (a slow socket close, as under load), so the old pool
    // starts draining with the checkout still in its queue: an ending pg-pool never
    // serves its queue.
    const closing = new HeldCloses();
    await createRole(cluster, 'held_close', 'pw_held');
    const { pool } = poolFor('held_close', 'pw_held', { max: 1, maxUses: 1, Client: closing.clientClass() });
    const held = await pool.connect();
    const waiting = pool.query('SELECT current_user AS user').then((result) => result.rows[0].user as string);
    expect(pool.waitingCount).toBe(1); // queued in hotload-pg, the generation being full
    closing.hold();
    held.release();
    const switched = nextEvent<SwitchEvent>(pool, 'switch');
    const drained = nextEvent(pool, 'drained');
    void pool.switchTo(configFor(cluster));
    await switched;
    closing.release();
    // Before: the old pool ended with the checkout in its queue; the query never settled.
    expect(await Promise.race([waiting, drained.then(() => 'drained first')])).toBe('held_close');
    await drained;
  });

  it('lets a transaction open across a switch commit on its original connection', async () => {
    await cluster.query('CREATE TABLE IF NOT EXISTS tx_across (v int)');
    const { pool } = poolFor('postgres', cluster.superuserPassword);
    const client = await pool.connect();
    const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    await client.query('BEGIN');
    await client.query('INSERT INTO tx_across VALUES (1)');
    const drained = nextEvent(pool, 'drained');
    await pool.switchTo(configFor(cluster, { applicationName: 'after-tx' }));
    // New work goes to the new generation while the transaction is still open.
    expect((await pool.query('SHOW application_name')).rows[0].application_name).toBe('after-tx');
    await client.query('INSERT INTO tx_across VALUES (2)');
    expect((await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid).toBe(pid);
    await client.query('COMMIT');
    client.release();
    const event = await drained;
    expect(event).toMatchObject({ forced: false });
    expect((await pool.query('SELECT count(*)::int AS n FROM tx_across')).rows).toEqual([{ n: 2 }]);
    await pool.end();
  });

  it('force-closes a client held past drainTimeoutMillis with a clear error', async () => {
    const { pool } = poolFor('postgres', cluster.superuserPassword, { drainTimeoutMillis: 300 });
    const client = await pool.connect();
    await client.query('BEGIN');
    const inFlight = client.query('SELECT pg_sleep(30)').then(
      () => undefined,
      (error: Error) => error,
    );
    const forceClosed = nextEvent<{ generation: number; connections: number }>(pool, 'forceClosed');
    const drained = nextEvent(pool, 'drained');
    await pool.switchTo(configFor(cluster, { applicationName: 'after-force' }));
    expect(await forceClosed).toMatchObject({ generation: 1, connections: 1 });
    const error = await inFlight;
    expect(error).toBeInstanceOf(ForceClosedError);
    expect(error?.message).toMatch(/generation 1 .*300 ms/);
    await expect(client.query('SELECT 1')).rejects.toBeInstanceOf(ForceClosedError);
    expect(await drained).toMatchObject({ generation: 1, forced: true });
    client.release(); // the holder's release after the fact is harmless
    expect((await pool.query('SHOW application_name')).rows[0].application_name).toBe('after-force');
    await pool.end();
  });

  it('force-closes a client in pg 8.23 pipeline mode: every query it has written fails with the clear error', async () => {
    const { pool } = poolFor('postgres', cluster.superuserPassword, {
      drainTimeoutMillis: 300,
      pipeline: true,
    } as pg.PoolConfig);
    const client = await pool.connect();
    // Written together: the two behind the sleep wait for it on the same connection.
    const inFlight = ['SELECT pg_sleep(30)', 'SELECT 1', 'SELECT 2'].map((sql) =>
      client.query(sql).then(
        () => undefined,
        (error: Error) => error,
      ),
    );
    const drained = nextEvent(pool, 'drained');
    await pool.switchTo(configFor(cluster, { applicationName: 'after-pipeline' }));
    for (const error of await Promise.all(inFlight)) expect(error).toBeInstanceOf(ForceClosedError);
    expect(await drained).toMatchObject({ generation: 1, forced: true });
    client.release();
    // The new generation's clients are pipelined too (the option is the pool's, not the source's).
    const next = await pool.connect();
    expect((next as unknown as { pipeline: boolean }).pipeline).toBe(true);
    expect((await next.query('SHOW application_name')).rows[0].application_name).toBe('after-pipeline');
    next.release();
    await pool.end();
  });

  it('a force-closed client leaves no query running on the server (the cancel request stops it)', async () => {
    const { pool } = poolFor('postgres', cluster.superuserPassword, { drainTimeoutMillis: 300 });
    const client = await pool.connect();
    // Far longer than the poll below: without a cancel the backend would still be sleeping.
    const inFlight = client.query('SELECT pg_sleep(300)').catch((error: Error) => error);
    const drained = nextEvent(pool, 'drained');
    await pool.switchTo(configFor(cluster, { applicationName: 'after-cancel' }));
    expect(await inFlight).toBeInstanceOf(ForceClosedError);
    expect(await drained).toMatchObject({ generation: 1, forced: true });
    const sleeping = async () =>
      (await cluster.query("SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(300)'")).rows;
    // A cancelled backend leaves pg_stat_activity a moment later: poll, bounded, then assert.
    let left = await sleeping();
    for (let i = 0; i < 100 && left.length > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      left = await sleeping();
    }
    expect(left).toEqual([]);
    client.release();
    await pool.end();
  });
});

describe('database ahead of the secret', () => {
  it('still fails a checkout when the generation has no client to serve it (as pg.Pool does)', async () => {
    const { pool } = poolFor('app_a', 'wrong-password');
    await expect(pool.query('SELECT 1')).rejects.toMatchObject({ code: '28P01' });
  });
});

describe('secret ahead of the database', () => {
  it('keeps serving on the old generation, reports, and switches once the database accepts the password', async () => {
    await cluster.query("ALTER ROLE app_a PASSWORD 'early_1'");
    const { pool, events } = poolFor('app_a', 'early_1');
    const traffic = load(pool, 4);
    const failed = nextEvent<VerifyFailedEvent>(pool, 'verifyFailed', (e) => e.attempt >= 2);
    const switched = pool.switchTo(configFor(cluster, { user: 'app_a', password: 'early_2_not_yet' }));
    const failure = await failed;
    expect(failure.error.message).toMatch(/password authentication failed/);
    expect(pool.generation).toBe(1);
    await cluster.query("ALTER ROLE app_a PASSWORD 'early_2_not_yet'");
    expect(await switched).toBe(true);
    expect(pool.generation).toBeGreaterThan(1);
    const stats = await traffic.stop();
    expect(stats.failed).toEqual([]);
    const text =
      JSON.stringify(events) + events.map((e) => String((e as { error?: Error }).error?.stack)).join();
    expect(text).not.toContain('early_1');
    expect(text).not.toContain('early_2_not_yet');
    await pool.end();
  });

  it('reports a config that cannot even be built (missing sslrootcert) without crashing, and keeps serving', async () => {
    const { pool } = poolFor('postgres', cluster.superuserPassword);
    const broken = configFor(cluster).with({
      sslmode: 'verify-full',
      params: { sslrootcert: '/nonexistent/root.crt' },
    });
    const failed = nextEvent<VerifyFailedEvent>(pool, 'verifyFailed');
    const failing = pool.switchTo(broken);
    const failure = await failed;
    expect(failure).toMatchObject({ generation: 0, attempt: 1 });
    expect(failure.error).toMatchObject({ code: 'missing' });
    expect(failure.error.message).toContain('missing in /nonexistent/root.crt [sslrootcert]');
    expect((await pool.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    expect(await pool.switchTo(configFor(cluster, { applicationName: 'fixed' }))).toBe(true);
    expect(await failing).toBe(false);
  });

  it('converges to the newest config when a newer change supersedes a failing one', async () => {
    const { pool } = poolFor('postgres', cluster.superuserPassword);
    const failing = pool.switchTo(configFor(cluster, { password: 'never-valid' }));
    await nextEvent(pool, 'verifyFailed');
    const good = pool.switchTo(configFor(cluster, { applicationName: 'newest' }));
    expect(await failing).toBe(false);
    expect(await good).toBe(true);
    expect((await pool.query('SHOW application_name')).rows[0].application_name).toBe('newest');
    expect(pool.otherGenerations.length).toBeLessThanOrEqual(1); // at most the draining one
    await pool.end();
    expect(pool.totalCount).toBe(0);
  });
});

describe('another server', () => {
  it('moves new work to a second cluster and closes the old pool', async () => {
    const second = await startCluster();
    try {
      const { pool } = poolFor('postgres', cluster.superuserPassword);
      const traffic = load(pool, 4);
      const drained = nextEvent(pool, 'drained');
      await pool.switchTo(configFor(second));
      await drained;
      const stats = await traffic.stop();
      expect(stats.failed).toEqual([]);
      const port = await pool.query('SHOW port');
      expect(Number(port.rows[0].port)).toBe(second.port);
      expect(pool.otherGenerations).toEqual([]);
      await pool.end();
    } finally {
      await second.stop();
    }
  });
});

describe('faults', () => {
  it('recovers from a database restart, outside and during a switch; end() does not hang', async () => {
    const { pool } = poolFor('postgres', cluster.superuserPassword, { max: 2 });
    pool.on('error', () => {}); // idle clients die with the server: pg reports them here
    await pool.query('SELECT 1');
    await cluster.restart();
    await eventually(() => pool.query('SELECT 1'));
    const switching = pool.switchTo(configFor(cluster, { applicationName: 'after-restart' }));
    await cluster.restart();
    expect(await switching).toBe(true);
    await eventually(async () =>
      expect((await pool.query('SHOW application_name')).rows[0].application_name).toBe('after-restart'),
    );
    await pool.end();
    expect(pool.ended).toBe(true);
  });

  it('recovers from a network cut, outside and during a switch; end() does not hang', async () => {
    const proxy = await FaultProxy.start({ host: cluster.host, port: cluster.port });
    try {
      const viaProxy = (applicationName: string) =>
        configFor(cluster, { applicationName }).with({ host: proxy.host, port: proxy.port });
      const pool = new Pool({
        ...cluster.connectionConfig({ host: proxy.host, port: proxy.port }),
        hotload: { verifyRetryInitialMillis: 20, verifyRetryMaxMillis: 100, verifyTimeoutMillis: 2_000 },
      });
      pool.on('error', () => {});
      await pool.query('SELECT 1');
      proxy.resetAll();
      await eventually(() => pool.query('SELECT 1'));
      proxy.resetAll(); // a full cut: open connections die, new ones are refused
      await proxy.refuseNew();
      const failed = nextEvent(pool, 'verifyFailed');
      const switching = pool.switchTo(viaProxy('after-cut'));
      await failed;
      await proxy.resume();
      expect(await switching).toBe(true);
      await eventually(async () =>
        expect((await pool.query('SHOW application_name')).rows[0].application_name).toBe('after-cut'),
      );
      proxy.stall();
      const stuck = pool.query('SELECT 1').catch((error: Error) => error);
      proxy.resetAll();
      // The query in flight on the reset connection fails as it would with pg.Pool.
      expect(await stuck).toMatchObject({
        message: expect.stringMatching(/Connection terminated|ECONNRESET/),
      });
      await proxy.resume();
      await pool.end();
      expect(pool.ended).toBe(true);
    } finally {
      await proxy.close();
    }
  });
});

describe('stalled handshakes', () => {
  /**
   * A pool serving on `cluster` is asked to switch to a config whose server never answers
   * (a stalled proxy); `step` does what the test is about, then `end()` must close every
   * generation and the stalled switch must report that it did not happen.
   */
  async function endAfterStalledSwitch(
    hotload: HotloadOptions,
    step: (pool: Pool, proxy: FaultProxy) => Promise<void>,
  ): Promise<void> {
    const proxy = await FaultProxy.start({ host: cluster.host, port: cluster.port });
    try {
      const pool = new Pool({ ...cluster.connectionConfig(), hotload });
      await pool.query('SELECT 1');
      proxy.stall(); // the candidate's TCP connection opens, the server never answers
      const stalled = pool.switchTo(
        configFor(cluster, { applicationName: 'stalled' }).with({ host: proxy.host, port: proxy.port }),
      );
      await step(pool, proxy);
      await pool.end();
      expect(await stalled).toBe(false);
      expect(pool.totalCount).toBe(0);
      expect(pool.otherGenerations).toEqual([]);
    } finally {
      await proxy.close();
    }
  }

  it('end() does not hang on a candidate whose connection never completes its handshake', async () => {
    const hotload = { verifyRetryInitialMillis: 20, verifyRetryMaxMillis: 100, verifyTimeoutMillis: 200 };
    await endAfterStalledSwitch(hotload, async (pool) => {
      await nextEvent(pool, 'verifyFailed');
    });
  });

  // In the next two the verify timeout is far off: only end() (or a newer switch) can stop
  // the stalled candidate's connect.
  it('end() does not wait for a superseded candidate still connecting', async () => {
    await endAfterStalledSwitch({ verifyTimeoutMillis: 600_000 }, async (pool) => {
      expect(await pool.switchTo(configFor(cluster, { applicationName: 'newer' }))).toBe(true);
    });
  });

  it('end() does not wait for the verify timeout of a pending switch', async () => {
    await endAfterStalledSwitch({ verifyTimeoutMillis: 600_000 }, async (_pool, proxy) => {
      await eventuallyTrue(() => proxy.connectionCount === 1); // the candidate is connecting
    });
  });
});

/** Polls `condition` (bounded) for a state that has no event. */
async function eventuallyTrue(condition: () => boolean, tries = 200): Promise<void> {
  for (let i = 0; i < tries && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

/** Retries `attempt` (bounded) until it stops throwing: the pool's recovery has no event. */
async function eventually<T>(attempt: () => Promise<T>, tries = 100): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (error) {
      if (i >= tries) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
