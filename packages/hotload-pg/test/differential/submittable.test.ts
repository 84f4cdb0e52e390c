/**
 * Submittables (pg-cursor, pg-query-stream), differentially. On a checked-out client they
 * behave as with pg.Pool. `pool.query(submittable)` is where hotload-pg differs on purpose.
 */
import type pg from 'pg';
import Cursor from 'pg-cursor';
import QueryStream from 'pg-query-stream';
import { describe, expect, it } from 'vitest';
import { Differential, once } from './differential.js';

const diff = new Differential();

describe('submittables on a checked-out client (same as pg.Pool)', () => {
  it('pg-cursor: read in batches, close, release', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      const client = await pool.connect();
      const cursor = client.query(new Cursor<{ n: number }>('SELECT generate_series(1, 10) AS n'));
      rec.step('first read', await cursor.read(3));
      rec.step('second read', await cursor.read(3));
      await cursor.close();
      client.release();
      await rec.settle('after', pool.query('SELECT 1 AS ok'));
    });
  });

  it('pg-query-stream: all rows, then release', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      const client = await pool.connect();
      const stream = client.query(
        new QueryStream('SELECT generate_series(1, 120) AS n', [], { batchSize: 25 }),
      );
      const rows: unknown[] = [];
      for await (const row of stream) rows.push(row);
      rec.step('rows', { count: rows.length, last: rows.at(-1) });
      client.release();
    });
  });
});

describe('pool.query(submittable): hotload-pg differs on purpose', () => {
  // pg-pool passes the submittable to client.query with a callback that pg's Client ignores
  // for submittables: pool.query returns a promise that never settles and the client is
  // never given back (node-postgres documents "use pool.connect() for cursors"). @types/pg
  // declares `query<T extends Submittable>(q: T): T`; hotload-pg does what that type says:
  // it returns the submittable and gives the client back when the submittable ends.
  it('pg.Pool keeps the client checked out forever; hotload-pg returns the submittable and the client', async () => {
    const recordings = await diff.record({ max: 1 }, async ({ pool, rec, cluster }) => {
      const cursor = new Cursor<{ n: number }>('SELECT generate_series(1, 5) AS n');
      const returned = pool.query(cursor as unknown as pg.Submittable) as unknown;
      rec.step('returns the submittable', { same: returned === cursor });
      // pg.Pool's promise rejects once the session is terminated below.
      if (returned instanceof Promise) returned.catch(() => {});
      rec.step('rows', await cursor.read(10));
      await cursor.close();
      await new Promise((resolve) => setImmediate(resolve));
      rec.step('after close');
      // pg.Pool's end() would wait for that client forever: end its session from the server.
      const removed = once(pool, 'remove');
      await cluster.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [
        'app_a',
      ]);
      await removed;
    });
    const after = (kind: keyof typeof recordings) =>
      recordings[kind].find((entry) => 'step' in entry && entry.step === 'after close');
    expect(after('pg.Pool')).toMatchObject({ state: { total: 1, idle: 0 } });
    for (const kind of ['hotload static', 'hotload source'] as const) {
      expect(recordings[kind]).toContainEqual(
        expect.objectContaining({ step: 'returns the submittable', value: { same: true } }),
      );
      expect(after(kind)).toMatchObject({ state: { total: 1, idle: 1 } });
    }
    expect(recordings['pg.Pool']).toContainEqual(
      expect.objectContaining({ step: 'returns the submittable', value: { same: false } }),
    );
  });
});
