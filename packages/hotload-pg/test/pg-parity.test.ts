/**
 * Where hotload-pg used to differ from pg.Pool in ways that hang or break programs
 * (issue 12): each case runs on a real pg.Pool and on hotload-pg's Pool (with a secret
 * directory source, and static where it matters) and compares what a program sees.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SourceError } from 'hotload-core';
import { Pool } from 'hotload-pg';
import { FaultProxy, nextEvent } from 'hotload-test-support';
import pg from 'pg';
import { describe, expect, it, onTestFinished } from 'vitest';
import { useSecretDirectory } from './secret-directory-fixture.js';

const here = dirname(fileURLToPath(import.meta.url));
const fixture = useSecretDirectory('parity', 'parity_pw_0');

/** The same pool three ways: pg.Pool, hotload static, hotload with the secret directory. */
function pools(
  options: pg.PoolConfig,
  password = 'parity_pw_0',
): Record<'pg' | 'static' | 'source', pg.Pool> {
  const made = factories(options, password);
  return { pg: made.pg(), static: made.static(), source: made.source() };
}

/**
 * Makers of {@link pools}, for cases that must act right after construction (before a
 * source's first read); every pool made is ended after the test.
 */
function factories(options: pg.PoolConfig, password = 'parity_pw_0') {
  const connection = { ...fixture.cluster.connectionConfig({ user: 'parity', password }) };
  const ended = <T extends pg.Pool>(pool: T): T => {
    onTestFinished(async () => {
      if (!pool.ending) await pool.end();
    });
    return pool;
  };
  return {
    pg: () => ended(new pg.Pool({ ...connection, ...options })),
    static: () => ended(new Pool({ ...connection, ...options })),
    source: () => ended(new Pool({ ...options, hotload: { source: { secretDirectory: fixture.dir } } })),
  };
}

/**
 * A fault proxy in front of the cluster, the secret directory pointing at it, and the
 * same connection for a pg.Pool (closed after the test).
 */
async function throughProxy() {
  const proxy = await FaultProxy.start({ host: fixture.cluster.host, port: fixture.cluster.port });
  onTestFinished(() => proxy.close());
  await fixture.writer.write(
    fixture.secret('parity_pw_0', { hostname: proxy.host, port: String(proxy.port) }),
  );
  const connection = {
    ...fixture.cluster.connectionConfig({ user: 'parity', password: 'parity_pw_0' }),
    host: proxy.host,
    port: proxy.port,
  };
  return { proxy, connection };
}

/** What a settled promise gave: the value, or the error's class, message and code. */
async function outcome(promise: Promise<unknown>): Promise<unknown> {
  try {
    return { value: await promise };
  } catch (error) {
    const { name, message, code } = error as Error & { code?: unknown };
    return { error: { name, message, code } };
  }
}

describe('checkout failures fail like pg.Pool', () => {
  it('a failing verify option fails the checkout at once (one connection tried)', async () => {
    await fixture.writer.write(fixture.secret('parity_pw_0'));
    const verify = (_client: pg.PoolClient, done: (err?: Error) => void) => done(new Error('verify says no'));
    const made = pools({ verify } as pg.PoolConfig);
    for (const [name, pool] of Object.entries(made)) {
      let connects = 0;
      pool.on('connect', () => connects++);
      expect(await outcome(pool.connect()), name).toEqual({
        error: { name: 'Error', message: 'verify says no', code: undefined },
      });
      expect(connects, name).toBe(1);
    }
  });

  it('a failing onConnect hook while another client is checked out fails the checkout (no wait, no retries)', async () => {
    await fixture.writer.write(fixture.secret('parity_pw_0'));
    let fail = false;
    const onConnect = async () => {
      if (fail) throw new Error('onConnect says no');
    };
    const made = pools({ max: 5, onConnect } as pg.PoolConfig);
    const held = await Promise.all(Object.values(made).map((pool) => pool.connect()));
    fail = true;
    const results = await Promise.all(Object.values(made).map((pool) => outcome(pool.query('SELECT 1'))));
    for (const result of results) {
      expect(result).toEqual({ error: { name: 'Error', message: 'onConnect says no', code: undefined } });
    }
    for (const client of held) client.release();
  });

  it('connectionTimeoutMillis bounds the whole wait of a queued checkout, with pg’s error', async () => {
    const { proxy, connection } = await throughProxy();
    const options = {
      ...connection,
      max: 1,
      connectionTimeoutMillis: 300,
    };
    const made: pg.Pool[] = [
      new pg.Pool(options),
      new Pool({
        max: 1,
        connectionTimeoutMillis: 300,
        hotload: { source: { secretDirectory: fixture.dir } },
      }),
    ];
    onTestFinished(async () => {
      await Promise.all(made.map((pool) => pool.end()));
    });
    const held = await Promise.all(made.map((pool) => pool.connect()));
    // Queued behind the held client, which then goes away: the waiter needs a new
    // connection, and new connections stall (the server never answers).
    const waiting = made.map((pool) => outcome(pool.connect()));
    proxy.stall();
    for (const client of held) client.release(new Error('gone'));
    const results = await Promise.all(waiting);
    await proxy.resume();
    expect(results[1]).toEqual(results[0]);
    expect(results[0]).toEqual({
      error: { name: 'Error', message: 'timeout exceeded when trying to connect', code: undefined },
    });
  });
});

describe('connection timeout of a first checkout', () => {
  it("a pool's first connection that never completes its handshake fails with pg's connection timeout, before the first read too", async () => {
    const { proxy, connection } = await throughProxy();
    proxy.stall();
    const options = { connectionTimeoutMillis: 300 };
    const made: pg.Pool[] = [
      new pg.Pool({ ...connection, ...options }),
      new Pool({ ...options, hotload: { source: { secretDirectory: fixture.dir } } }),
    ];
    onTestFinished(async () => {
      await proxy.resume();
      await Promise.all(made.map((pool) => pool.end()));
    });
    const results = await Promise.all(made.map((pool) => outcome(pool.query('SELECT 1'))));
    expect(results[1]).toEqual(results[0]);
    expect(results[0]).toEqual({
      error: { name: 'Error', message: 'Connection terminated due to connection timeout', code: undefined },
    });
  });
});

describe('credentials refused while the secret is behind (the one intended difference)', () => {
  it('waits for a client of the generation when the database refuses the old password; pg.Pool fails', async () => {
    await fixture.cluster.query("ALTER ROLE parity PASSWORD 'behind_1'");
    await fixture.writer.write(fixture.secret('behind_1'));
    const made = pools({ max: 4 }, 'behind_1');
    const source = made.source as Pool;
    const held = await source.connect();
    const heldPid = (await held.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const pgHeld = await made.pg.connect();
    await fixture.cluster.query("ALTER ROLE parity PASSWORD 'behind_2'"); // the secret follows later
    // pg.Pool: the new connection is refused for the old password, the query fails.
    expect(await outcome(made.pg.query('SELECT 1'))).toMatchObject({ error: { code: '28P01' } });
    pgHeld.release();
    const query = made.source.query('SELECT pg_backend_pid() AS pid');
    const refused = nextEvent<Error>(
      made.source,
      'error',
      (err) => (err as { code?: string }).code === '28P01',
    );
    void refused;
    await until(() => made.source.waitingCount === 1);
    held.release();
    expect((await query).rows[0].pid).toBe(heldPid);
    const switched = nextEvent(made.source, 'switch');
    await fixture.writer.write(fixture.secret('behind_2'));
    await switched;
    expect((await made.source.query('SELECT current_user AS u')).rows).toEqual([{ u: 'parity' }]);
    await fixture.cluster.query("ALTER ROLE parity PASSWORD 'parity_pw_0'");
  });

  it('re-reads the source at once when the database refuses the credentials (no file event needed)', async () => {
    // A libpq-environment source: a new PGPASSWORD in its env object makes no file event,
    // so only the re-read on the refused login can find it.
    await fixture.cluster.query("ALTER ROLE parity PASSWORD 'env_1'");
    const connection = fixture.cluster.connectionConfig();
    const env = {
      PGHOST: connection.host,
      PGPORT: String(connection.port),
      PGUSER: 'parity',
      PGPASSWORD: 'env_1',
      PGDATABASE: 'postgres',
      PGPASSFILE: join(fixture.dir, '..', 'pgpass'),
    };
    const pool = new Pool({
      max: 2,
      hotload: { source: { libpqEnv: true, env }, credentialWaitMillis: 30_000 },
    });
    onTestFinished(() => pool.end());
    const held = await pool.connect();
    const first = pool.generation;
    await fixture.cluster.query("ALTER ROLE parity PASSWORD 'env_2'");
    env.PGPASSWORD = 'env_2';
    const switched = nextEvent(pool, 'switch');
    const query = pool.query('SELECT current_user AS u');
    await switched;
    expect((await query).rows).toEqual([{ u: 'parity' }]);
    expect(pool.generation).toBeGreaterThan(first ?? 0);
    held.release();
    await fixture.cluster.query("ALTER ROLE parity PASSWORD 'parity_pw_0'");
  });

  it('gives up after credentialWaitMillis with the database’s error when nothing comes', async () => {
    await fixture.cluster.query("ALTER ROLE parity PASSWORD 'stuck_1'");
    await fixture.writer.write(fixture.secret('stuck_1'));
    const pool = new Pool({
      max: 2,
      hotload: { source: { secretDirectory: fixture.dir }, credentialWaitMillis: 200 },
    });
    onTestFinished(() => pool.end());
    const held = await pool.connect();
    await fixture.cluster.query("ALTER ROLE parity PASSWORD 'stuck_2'");
    const connects: unknown[] = [];
    pool.on('connect', (client) => connects.push(client));
    expect(await outcome(pool.query('SELECT 1'))).toMatchObject({
      error: { code: '28P01', message: expect.stringMatching(/password authentication failed/) },
    });
    expect(connects).toEqual([]); // no connection got through meanwhile
    held.release();
    await fixture.cluster.query("ALTER ROLE parity PASSWORD 'parity_pw_0'");
  });
});

describe('end()', () => {
  it('rejects a second end() as pg.Pool does, promise and callback forms', async () => {
    await fixture.writer.write(fixture.secret('parity_pw_0'));
    const made = pools({});
    for (const [name, pool] of Object.entries(made)) {
      await pool.query('SELECT 1');
      await pool.end();
      expect(await outcome(pool.end()), name).toEqual({
        error: { name: 'Error', message: 'Called end on pool more than once', code: undefined },
      });
      const viaCallback = await new Promise<Error | undefined>((resolve) =>
        pool.end((err?: Error) => resolve(err)),
      );
      expect(viaCallback?.message, name).toBe('Called end on pool more than once');
    }
  });

  it('lets a query asked before end() finish, even before the source was first read', async () => {
    await fixture.writer.write(fixture.secret('parity_pw_0'));
    for (const [name, make] of Object.entries(factories({}))) {
      const pool = make();
      const asked = pool.query('SELECT 1 AS one');
      await pool.end();
      expect(await outcome(asked), name).toMatchObject({ value: { rows: [{ one: 1 }] } });
    }
  });
});

describe('counts', () => {
  it('counts a checkout in progress in totalCount, before the source was read too', async () => {
    await fixture.writer.write(fixture.secret('parity_pw_0'));
    for (const [name, make] of Object.entries(factories({ max: 2 }))) {
      const pool = make();
      const queries = [pool.query('SELECT 1'), pool.query('SELECT 1'), pool.query('SELECT 1')];
      expect([pool.totalCount, pool.waitingCount], name).toEqual([2, 1]);
      await Promise.all(queries);
    }
  });
});

describe('no valid config at start', () => {
  it('a missing secret folder: ready() and queries reject with the SourceError; it serves once the folder appears', async () => {
    const pool = new Pool({ hotload: { source: { secretDirectory: fixture.dir } } });
    onTestFinished(() => pool.end());
    await expect(pool.ready()).rejects.toBeInstanceOf(SourceError);
    await expect(pool.ready()).rejects.toMatchObject({ code: 'missing' });
    await expect(pool.query('SELECT 1')).rejects.toMatchObject({ name: 'SourceError', code: 'missing' });
    const switched = nextEvent(pool, 'switch');
    await fixture.writer.write(fixture.secret('parity_pw_0'));
    await switched;
    expect((await pool.query('SELECT current_user AS u')).rows).toEqual([{ u: 'parity' }]);
    await expect(pool.ready()).resolves.toBeUndefined();
  });

  it('Pool.create() rejects with the SourceError instead (and ends the pool)', async () => {
    const created = Pool.create({ hotload: { source: { secretDirectory: fixture.dir } } });
    await expect(created).rejects.toMatchObject({ name: 'SourceError', code: 'missing' });
  });

  it('a first config that cannot be built (missing sslrootcert): SourceError, fast failures, then recovery', async () => {
    await fixture.writer.write(
      fixture.secret('parity_pw_0', { sslmode: 'verify-full', sslrootcert: '/nonexistent/root.crt' }),
    );
    const pool = new Pool({ hotload: { source: { secretDirectory: fixture.dir } } });
    onTestFinished(() => pool.end());
    const error = await pool.ready().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SourceError);
    expect(error).toMatchObject({ code: 'missing', key: 'sslrootcert', file: '/nonexistent/root.crt' });
    await expect(pool.query('SELECT 1')).rejects.toBe(error);
    const switched = nextEvent(pool, 'switch');
    await fixture.writer.write(fixture.secret('parity_pw_0'));
    await switched;
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});

describe('the process exits as it would with pg.Pool', () => {
  const run = (scenario: string) =>
    promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(here, 'child/exits.ts'), scenario, fixture.dir],
      {
        cwd: join(here, '../../..'),
        // A guard, not a measurement: a child still running then has hung.
        timeout: 30_000,
      },
    );

  it('with allowExitOnIdle, and after idleTimeoutMillis, a pool never ended does not hold the process', async () => {
    await fixture.writer.write(fixture.secret('parity_pw_0'));
    expect((await run('allowExitOnIdle')).stdout.trim()).toBe('queried: 1');
    expect((await run('idleTimeout')).stdout.trim()).toBe('queried: 1');
  });

  it('a constructor that throws leaves no watcher running', async () => {
    await fixture.writer.write(fixture.secret('parity_pw_0'));
    expect((await run('throwingConstructor')).stdout.trim()).toMatch(/^threw: /);
  });
});

/** Polls a condition the pool has no event for (a checkout joining its queue), bounded. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}
