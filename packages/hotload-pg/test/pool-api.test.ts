/**
 * pg.Pool's own behaviour, run against hotload-pg's Pool (no hotload source: a single
 * generation built from the pg options, i.e. what `import { Pool } from 'pg'` does).
 */
import { inspect } from 'node:util';
import hotloadPg, { Pool } from 'hotload-pg';
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';
import Cursor from 'pg-cursor';
import QueryStream from 'pg-query-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

function newPool(options: pg.PoolConfig = {}): Pool {
  return new Pool({ ...cluster.connectionConfig(), ...options });
}

describe('identity', () => {
  it("is a pg.Pool of the app's pg (instanceof, as Prisma's adapter checks) and prints as Pool", async () => {
    const pool = newPool();
    expect(pool).toBeInstanceOf(pg.Pool);
    expect(inspect(pool)).toMatch(/^Pool \{/);
    await pool.end();
  });

  it("default export: `import pg from 'hotload-pg'` is pg's module with hotload's Pool", async () => {
    expect(hotloadPg.Pool).toBe(Pool);
    expect(hotloadPg.Client).toBe(pg.Client);
    const pool = new hotloadPg.Pool(cluster.connectionConfig());
    expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    await pool.end();
  });
});

describe('query', () => {
  it('runs text with values, promise form', async () => {
    const pool = newPool();
    const result = await pool.query<{ sum: number }>('SELECT $1::int + $2::int AS sum', [2, 3]);
    expect(result.rows).toEqual([{ sum: 5 }]);
    await pool.end();
  });

  it('runs text, callback form, with and without values', async () => {
    const pool = newPool();
    const plain = await new Promise<pg.QueryResult>((resolve, reject) =>
      pool.query('SELECT 1 AS one', (err, res) => (err ? reject(err) : resolve(res))),
    );
    const withValues = await new Promise<pg.QueryResult>((resolve, reject) =>
      pool.query('SELECT $1::text AS v', ['x'], (err, res) => (err ? reject(err) : resolve(res))),
    );
    expect(plain.rows).toEqual([{ one: 1 }]);
    expect(withValues.rows).toEqual([{ v: 'x' }]);
    await pool.end();
  });

  it('runs config objects (rowMode array, named statements)', async () => {
    const pool = newPool();
    const arrays = await pool.query({ text: 'SELECT 1 AS a, 2 AS b', rowMode: 'array' });
    expect(arrays.rows).toEqual([[1, 2]]);
    const named = await pool.query({ name: 'plus-one', text: 'SELECT $1::int + 1 AS n', values: [41] });
    expect(named.rows).toEqual([{ n: 42 }]);
    await pool.end();
  });

  it('rejects SQL errors and passes them to callbacks, and keeps working', async () => {
    const pool = newPool();
    await expect(pool.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
    const err = await new Promise<Error>((resolve) => pool.query('SELEKT', (e) => resolve(e)));
    expect(err).toMatchObject({ code: '42601' });
    expect((await pool.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    await pool.end();
  });

  it('refuses a function as first parameter, like pg-pool', async () => {
    const pool = newPool();
    const query = pool.query as unknown as (cb: (err: Error) => void) => void;
    const err = await new Promise<Error>((resolve) => query.call(pool, resolve));
    expect(err.message).toMatch(/Passing a function as the first parameter/);
    await pool.end();
  });

  it('streams rows of a pg-query-stream submittable and returns the client', async () => {
    const pool = newPool({ max: 1 });
    const stream = pool.query(new QueryStream('SELECT generate_series(1, 250) AS n', [], { batchSize: 50 }));
    const rows: number[] = [];
    for await (const row of stream) rows.push((row as { n: number }).n);
    expect(rows).toHaveLength(250);
    expect(rows.at(-1)).toBe(250);
    // max 1: the next query only runs if the stream gave its client back.
    expect((await pool.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    await pool.end();
  });

  it('reads a pg-cursor submittable and returns the client once it is closed', async () => {
    const pool = newPool({ max: 1 });
    const cursor = pool.query(new Cursor<{ n: number }>('SELECT generate_series(1, 10) AS n'));
    const first = await cursor.read(3);
    expect(first.map((row) => row.n)).toEqual([1, 2, 3]);
    await cursor.close();
    expect((await pool.query('SELECT 2 AS ok')).rows).toEqual([{ ok: 2 }]);
    await pool.end();
  });
});

describe('connect', () => {
  it('checks out a client (promise form) that runs a transaction and is released', async () => {
    const pool = newPool();
    const client = await pool.connect();
    await client.query('BEGIN');
    await client.query('CREATE TEMP TABLE t (v int)');
    await client.query('INSERT INTO t VALUES (1)');
    expect((await client.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 1 }]);
    await client.query('COMMIT');
    expect(pool.idleCount).toBe(0);
    client.release();
    expect(pool.idleCount).toBe(1);
    expect(pool.totalCount).toBe(1);
    await pool.end();
  });

  it('checks out a client (callback form) and reuses it after release()', async () => {
    const pool = newPool();
    const pid = await new Promise<number>((resolve, reject) =>
      pool.connect((err, client, done) => {
        if (err || !client) return reject(err);
        client.query('SELECT pg_backend_pid() AS pid', (queryErr, res) => {
          done();
          queryErr ? reject(queryErr) : resolve(res.rows[0].pid);
        });
      }),
    );
    const again = await pool.query('SELECT pg_backend_pid() AS pid');
    expect(again.rows[0].pid).toBe(pid);
    await pool.end();
  });

  it('destroys a client released with an error', async () => {
    const pool = newPool();
    const removed = new Promise((resolve) => pool.once('remove', resolve));
    const client = await pool.connect();
    const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    client.release(new Error('broken'));
    await removed;
    expect(pool.totalCount).toBe(0);
    expect((await pool.query('SELECT pg_backend_pid() AS pid')).rows[0].pid).not.toBe(pid);
    await pool.end();
  });

  it('throws on a double release', async () => {
    const pool = newPool();
    const client = await pool.connect();
    client.release();
    expect(() => client.release()).toThrow(/already been released/);
    await pool.end();
  });

  it('queues checkouts beyond max and serves them on release (waitingCount)', async () => {
    const pool = newPool({ max: 2 });
    const a = await pool.connect();
    const b = await pool.connect();
    const third = pool.connect();
    expect(pool.waitingCount).toBe(1);
    a.release();
    const c = await third;
    expect(pool.waitingCount).toBe(0);
    expect(pool.totalCount).toBe(2);
    b.release();
    c.release();
    await pool.end();
  });

  it('hands a released client to the waiters in order, with release then acquire, nothing idle', async () => {
    const pool = newPool({ max: 1 });
    const seen: string[] = [];
    pool.on('release', () => seen.push('release'));
    pool.on('acquire', () => seen.push('acquire'));
    const a = await pool.connect();
    const pid = (await a.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const order: string[] = [];
    const served = (name: string) => (client: pg.PoolClient) => {
      order.push(name);
      return client;
    };
    const first = pool.connect().then(served('first'));
    const second = pool.connect().then(served('second'));
    expect(pool.waitingCount).toBe(2);
    seen.length = 0;
    a.release();
    // As with pg.Pool: the client went straight to the first waiter, never idle.
    expect(pool.waitingCount).toBe(1);
    expect(pool.idleCount).toBe(0);
    const b = await first;
    expect((await b.query('SELECT pg_backend_pid() AS pid')).rows[0].pid).toBe(pid);
    expect(seen).toEqual(['release', 'acquire']);
    b.release();
    const c = await second;
    expect(order).toEqual(['first', 'second']);
    expect(pool.totalCount).toBe(1);
    expect(pool.waitingCount).toBe(0);
    c.release();
    await pool.end();
  });

  it('gives a waiter a new connection when the released client is spent (maxUses) or broken', async () => {
    const pool = newPool({ max: 1, maxUses: 1 });
    const a = await pool.connect();
    const pidA = (await a.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const waiting = pool.connect();
    const removed = new Promise((resolve) => pool.once('remove', resolve));
    a.release();
    expect(await removed).toBe(a);
    const b = await waiting;
    const pidB = (await b.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    expect(pidB).not.toBe(pidA);
    const next = pool.query('SELECT pg_backend_pid() AS pid');
    b.release(new Error('broken'));
    expect((await next).rows[0].pid).not.toBe(pidB);
    expect(pool.totalCount).toBeLessThanOrEqual(1);
    expect(pool.waitingCount).toBe(0);
    await pool.end();
  });

  it('times a waiting checkout out after connectionTimeoutMillis', async () => {
    const pool = newPool({ max: 1, connectionTimeoutMillis: 200 });
    const held = await pool.connect();
    await expect(pool.connect()).rejects.toThrow('timeout exceeded when trying to connect');
    held.release();
    await pool.end();
  });

  it('passes connection errors to the caller', async () => {
    const pool = newPool({ password: 'wrong-password' });
    await expect(pool.connect()).rejects.toMatchObject({ code: '28P01' });
    await expect(pool.query('SELECT 1')).rejects.toMatchObject({ code: '28P01' });
    await pool.end();
  });
});

describe('events', () => {
  it('emits connect, acquire, release and remove with the client', async () => {
    const pool = newPool({ idleTimeoutMillis: 50 });
    const seen: string[] = [];
    let releasedClient: unknown;
    pool.on('connect', () => seen.push('connect'));
    pool.on('acquire', () => seen.push('acquire'));
    pool.on('release', (err, client) => {
      seen.push(`release:${err === undefined ? 'ok' : 'err'}`);
      releasedClient = client;
    });
    const removed = new Promise((resolve) => pool.on('remove', resolve));
    const client = await pool.connect();
    client.release();
    expect(releasedClient).toBe(client);
    expect(await removed).toBe(client); // idle timeout
    expect(seen).toEqual(['connect', 'acquire', 'release:ok']);
    await pool.end();
  });

  it("emits 'error' with the client when an idle client's connection dies", async () => {
    const pool = newPool();
    const client = await pool.connect();
    const pid = (await client.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    client.release();
    const errored = new Promise<[Error, pg.PoolClient]>((resolve) =>
      pool.on('error', (err, c) => resolve([err, c])),
    );
    await cluster.query(`SELECT pg_terminate_backend(${pid})`);
    const [err, erroredClient] = await errored;
    expect(err.message).toMatch(/terminat/);
    expect(erroredClient).toBe(client);
    await pool.end();
  });
});

describe('end', () => {
  it('ends (promise form), sets ending/ended, refuses later use and a second end()', async () => {
    const pool = newPool();
    await pool.query('SELECT 1');
    expect(pool.ending).toBe(false);
    const ending = pool.end();
    expect(pool.ending).toBe(true);
    await ending;
    expect(pool.ended).toBe(true);
    expect(pool.totalCount).toBe(0);
    await expect(pool.end()).rejects.toThrow('Called end on pool more than once');
    await expect(pool.connect()).rejects.toThrow('Cannot use a pool after calling end on the pool');
    await expect(pool.query('SELECT 1')).rejects.toThrow('Cannot use a pool after calling end on the pool');
  });

  it('ends (callback form) once checked-out clients are released', async () => {
    const pool = newPool();
    const client = await pool.connect();
    let ended = false;
    const done = new Promise<void>((resolve) =>
      pool.end(() => {
        ended = true;
        resolve();
      }),
    );
    expect(pool.ending).toBe(true);
    await client.query('SELECT 1');
    expect(ended).toBe(false);
    client.release();
    await done;
    expect(pool.ended).toBe(true);
  });

  it('exposes pg-pool options with defaults', async () => {
    const pool = newPool({ max: 3 });
    expect(pool.options.max).toBe(3);
    expect(pool.options.idleTimeoutMillis).toBe(10_000);
    expect(JSON.stringify(pool.options)).not.toContain(cluster.superuserPassword);
    await pool.end();
  });
});
