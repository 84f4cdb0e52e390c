/**
 * pool.query, differentially: promise and callback forms, values, config objects, SQL
 * errors, the function-as-first-argument guard, and the counters/events around each.
 */
import type pg from 'pg';
import { describe, it } from 'vitest';
import { Differential } from './differential.js';

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
      await rec.settle('missing table', pool.query('SELECT * FROM no_such_table'));
      const syntax = rec.callback<[Error]>('syntax error');
      pool.query('SELEKT', syntax.cb);
      await syntax.called;
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

  it('a query that fails with the connection (pg_terminate_backend of its own session)', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      await rec.settle('terminated', pool.query('SELECT pg_terminate_backend(pg_backend_pid())'));
      await rec.settle('next query on a new client', pool.query('SELECT 1 AS ok'));
    });
  });
});
