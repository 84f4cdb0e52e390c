/**
 * pool.query, differentially: promise and callback forms, values, config objects, SQL
 * errors, the function-as-first-argument guard, and the counters/events around each.
 */

import type { PostgresCluster } from 'hotload-test-support';
import type pg from 'pg';
import { describe, it } from 'vitest';
import { Differential, once } from './differential.js';

const diff = new Differential();

describe('pool.query (same as pg.Pool)', () => {
  it('promise form: text, text with values, events and counters per step', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      rec.step('constructed');
      const first = pool.query('SELECT 1 AS one');
      rec.step('query asked');
      await rec.settle('first', first);
      await rec.settle('with values', pool.query('SELECT $1::int + $2::int AS sum', [2, 3]));
      await rec.settle('same client again', pool.query('SELECT 2 AS two'));
    });
  });

  it('callback form: with and without values; returns undefined', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const plain = rec.callback<[Error | undefined, pg.QueryResult]>('plain');
      rec.step('returned', { value: pool.query('SELECT 1 AS one', plain.cb) });
      await plain.called;
      const withValues = rec.callback<[Error | undefined, pg.QueryResult]>('with values');
      pool.query('SELECT $1::text AS v', ['x'], withValues.cb);
      await withValues.called;
    });
  });

  it('config objects: rowMode array, named prepared statement reused, types', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      await rec.settle('array rows', pool.query({ text: 'SELECT 1 AS a, 2 AS b', rowMode: 'array' }));
      const named = { name: 'plus-one', text: 'SELECT $1::int + 1 AS n' };
      await rec.settle('named', pool.query({ ...named, values: [41] }));
      await rec.settle('named again', pool.query({ ...named, values: [1] }));
      const asText = { getTypeParser: () => (value: string) => `text:${value}` };
      await rec.settle('custom types', pool.query({ text: 'SELECT 7 AS n', types: asText }));
    });
  });

  it('SQL errors reject (promise) and reach the callback; the client is released with the error and kept', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      // pg-pool releases the client with the query's error, so it is removed: wait for that
      // before the next query (which opens a new client) to keep the event order deterministic.
      let removed = once(pool, 'remove');
      await rec.settle('missing table', pool.query('SELECT * FROM no_such_table'));
      await removed;
      removed = once(pool, 'remove');
      const syntax = rec.callback<[Error]>('syntax error');
      pool.query('SELEKT', syntax.cb);
      await syntax.called;
      await removed;
      await rec.settle('still works', pool.query('SELECT 1 AS ok'));
    });
  });

  it('a function as first argument is refused, promise and callback', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const query = pool.query as unknown as (cb: (err: Error) => void) => unknown;
      const refused = rec.callback<[Error]>('callback refused');
      rec.step('returned', { value: query.call(pool, refused.cb) });
      await refused.called;
    });
  });

  it('queries beyond max queue (waitingCount) and run in order', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      const queries = [1, 2, 3, 4, 5].map((n) => pool.query('SELECT $1::int AS n', [n]));
      rec.step('five asked');
      const order: number[] = [];
      await Promise.all(queries.map((q) => q.then((r) => order.push(r.rows[0].n))));
      rec.step('all done', { order });
    });
  });

  it('pg options reach the clients (binary, application_name, statement_timeout)', async () => {
    const options = { binary: true, application_name: 'differential', statement_timeout: 4321 };
    await diff.expectSame(options, async ({ pool, rec }) => {
      const client = await pool.connect();
      rec.step('client', {
        binary: (client as unknown as { binary: boolean }).binary,
        settings: (await client.query('SHOW application_name')).rows,
        timeout: (await client.query('SHOW statement_timeout')).rows,
      });
      client.release();
    });
  });

  it('a query whose session is terminated by the server rejects; its client is removed', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec, cluster }) => {
      const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const removed = once(pool, 'remove');
      const running = pool.query('SELECT pg_sleep(30)').then(
        (result) => ({ resolved: result }),
        (error: Error) => ({ rejected: error }),
      );
      await untilActive(cluster, rows[0]!.pid);
      await cluster.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      const outcome = await running;
      await removed;
      rec.step('terminated and removed', outcome);
      await rec.settle('next query on a new client', pool.query('SELECT 1 AS ok'));
    });
  });
});

/** Resolves once the server shows `pid` running a statement (polls pg_stat_activity). */
async function untilActive(cluster: PostgresCluster, pid: number): Promise<void> {
  for (;;) {
    const { rows } = await cluster.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = $2', [
      pid,
      'active',
    ]);
    if (rows.length > 0) return;
  }
}
