/**
 * What node-postgres' own integration tests assert about errors through a pool
 * (`packages/pg/test/integration/connection-pool/error-tests.js`, `client/api-tests.js`'s
 * query timeouts, gh-issue 787), run differentially: each scenario on pg.Pool and on
 * hotload-pg's Pool (static and with a secret directory), the recordings compared.
 */
import { FaultProxy } from 'hotload-test-support';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Differential, once } from './differential.js';
import { untilRunning } from './server-activity.js';

const diff = new Differential();
const noop = (): void => {};
let proxy: FaultProxy;
beforeAll(async () => {
  proxy = await FaultProxy.start({ host: diff.cluster.host, port: diff.cluster.port });
  // pg's tests connect as a superuser and terminate backends from their own clients; the
  // app's sessions act as role `app` (SET role), which may then signal them too.
  await diff.cluster.query('GRANT pg_signal_backend TO app');
});

afterAll(async () => {
  await proxy?.close();
});

/** Resolves with the next `error` a client emits (then keeps it quiet, as pg's tests do). */
function nextClientError(client: pg.PoolClient): Promise<Error> {
  return new Promise((resolve) =>
    client.once('error', (err) => {
      client.on('error', noop);
      resolve(err);
    }),
  );
}

/** How a promise settled, as a value to record. */
function outcome<T>(promise: Promise<T>): Promise<{ resolved: T } | { rejected: unknown }> {
  return promise.then(
    (resolved) => ({ resolved }),
    (rejected: unknown) => ({ rejected }),
  );
}

async function backendPid(client: pg.PoolClient): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
}

describe('connection-pool/error-tests: errors of a checked-out client (same as pg.Pool)', () => {
  it("a checked-out client's backend terminated: the client emits 'error', not the pool; release(err) removes it", async () => {
    await diff.expectSame({ max: 2 }, async ({ pool, rec }) => {
      const held = await pool.connect();
      await held.query('SELECT now()');
      const killer = await pool.connect();
      const heldError = nextClientError(held);
      const pid = await backendPid(held);
      const killed = await killer.query('SELECT pg_terminate_backend($1) AS killed', [pid]);
      rec.step('terminated by the other client', killed.rows);
      const err = await heldError;
      rec.step('held client emitted', err);
      killer.release();
      const removed = once(pool, 'remove');
      held.release(err);
      await removed;
      rec.step('released with the error and removed');
      await rec.settle('the pool serves', pool.query('SELECT 1 AS one'));
    });
  });

  it('a connection-level error fails the query queued behind it ("Connection terminated unexpectedly")', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      const clientError = nextClientError(client);
      const terminating = outcome(client.query('SELECT pg_terminate_backend(pg_backend_pid())'));
      const queued = outcome(client.query('SELECT 1'));
      rec.step('own backend terminated', await terminating);
      rec.step('queued query', await queued);
      const err = await clientError;
      rec.step('client emitted', err);
      const removed = once(pool, 'remove');
      client.release(err);
      await removed;
      await rec.settle('the pool serves', pool.query('SELECT 1 AS one'));
    });
  });

  it('after a connection-level error, later queries on the client fail ("not queryable")', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      const clientError = nextClientError(client);
      rec.step(
        'own backend terminated',
        await outcome(client.query('SELECT pg_terminate_backend(pg_backend_pid())')),
      );
      const err = await clientError;
      rec.step('later query', await outcome(client.query('SELECT 1')));
      const removed = once(pool, 'remove');
      client.release(err);
      await removed;
      rec.step('removed');
    });
  });

  it('a socket error during pool.query fails it with that error and destroys the socket at once (pool._clients[0])', async () => {
    const recorded = await diff.expectSame({ max: 1 }, async ({ pool, rec, cluster }) => {
      const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const pid = rows[0]!.pid;
      const removed = once(pool, 'remove');
      const failed = new Promise<unknown[]>((resolve) =>
        pool.query('SELECT pg_sleep(30)', [], (...args: unknown[]) => resolve(args)),
      );
      // pg-pool's private list, as pg's test reads it: the one client, now running the sleep.
      const clients = (pool as unknown as { _clients: pg.Client[] })._clients;
      rec.step('clients listed', { count: clients.length });
      const stream = clients[0]!.connection.stream;
      try {
        await untilRunning(cluster, pid);
        stream.emit('error', new Error('network issue'));
        rec.step('callback', { args: await failed });
        rec.step('socket destroyed', { destroyed: stream.destroyed });
        await removed;
        rec.step('client removed');
      } finally {
        await cluster.query('SELECT pg_terminate_backend($1)', [pid]); // its sleep would outlive the test
      }
      await rec.settle('next query on a new client', pool.query('SELECT 1 AS one'));
    });
    expect(recorded).toContainEqual(expect.objectContaining({ step: 'clients listed', value: { count: 1 } }));
    expect(recorded).toContainEqual(
      expect.objectContaining({
        step: 'callback',
        value: { args: [{ error: 'Error', message: 'network issue' }] },
      }),
    );
    expect(recorded).toContainEqual(expect.objectContaining({ value: { destroyed: true } }));
  });
});

/**
 * A query's own query_timeout for the queries that are not the one timing out: long enough
 * never to fire, so only the statement under test depends on the pool's setting.
 */
const UNTIMED_QUERY_MILLIS = 600_000;

describe('client/api-tests: query_timeout through the pool (same as pg.Pool)', () => {
  it("a query past query_timeout fails with 'Query read timeout'; released with the error, the pool serves the next", async () => {
    // The pool's 200 ms applies to every query of its clients: only the pg_sleep is meant to
    // pass it. The backend is found and ended from the cluster's own session (no query of the
    // client's before the sleep), and the next checkout's query sets its own query_timeout
    // (a query's own setting wins over the pool's): on a loaded machine a plain SELECT can
    // take longer than 200 ms, and a query the test did not mean to time out failed it.
    await diff.expectSame({ query_timeout: 200 } as pg.PoolConfig, async ({ pool, rec, cluster }) => {
      const client = await pool.connect();
      const timedOut = await outcome(client.query('SELECT pg_sleep(30)'));
      rec.step('timed out', timedOut);
      client.on('error', noop);
      // pg does not cancel the statement: its backend still sleeps, and is ended here.
      await cluster.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'",
      );
      const removed = once(pool, 'remove');
      client.release((timedOut as { rejected: Error }).rejected);
      await removed;
      const next = await pool.connect();
      const one = await next.query({
        text: 'SELECT 1 AS one',
        query_timeout: UNTIMED_QUERY_MILLIS,
      } as pg.QueryConfig);
      rec.step('next checkout', one.rows);
      next.release();
    });
  });
});

describe('gh-issue 787: a pooled client ended by its holder (same as pg.Pool)', () => {
  it('client.end() instead of release(): nothing is removed until it is released, then the pool opens a new one', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      const client = await pool.connect();
      const name =
        'This is a super long query name just so I can test that an error message is properly spit out';
      await rec.settle('named query', client.query({ name, text: 'SELECT 1 AS one' }));
      await client.end();
      rec.step('ended by its holder');
      const removed = once(pool, 'remove');
      client.release();
      await removed;
      rec.step('released, then removed');
      await rec.settle('next query on a new client', pool.query('SELECT 2 AS two'));
    });
  });
});

describe('gh-issue 3174: a stray protocol message reaching an idle pooled client (same as pg.Pool)', () => {
  // A CommandComplete ('C', length 6, tag "f") that no query asked for, as poolers and
  // proxies sometimes send out of order; pg's test sends it from a fake server, here the
  // fault proxy slips it between the real server and the client.
  const strayCommandComplete = Buffer.from([0x43, 0, 0, 0, 6, 0x66, 0]);

  it("the pool emits 'error' with the client, removes it (idle and total 0), and serves the next query", async () => {
    const recorded = await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        await rec.settle('extended query', pool.query('SELECT $1::text AS v', ['foo']));
        const errored = once(pool, 'error');
        const removed = once(pool, 'remove');
        proxy.injectToClients(strayCommandComplete);
        await Promise.all([errored, removed]);
        rec.step('after the stray message');
        await rec.settle('next query', pool.query('SELECT 1 AS one'));
      },
      { target: () => ({ host: proxy.host, port: proxy.port }) },
    );
    expect(recorded).toContainEqual({
      event: 'error',
      args: [
        { error: 'Error', message: 'Received unexpected commandComplete message from backend.' },
        'client#1',
      ],
    });
    expect(recorded).toContainEqual(
      expect.objectContaining({
        step: 'after the stray message',
        state: expect.objectContaining({ idle: 0, total: 0 }),
      }),
    );
  });
});
