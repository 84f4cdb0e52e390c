/**
 * pool.end, differentially: promise and callback forms, a second call, use after end,
 * end with a client still checked out, work asked for just before end, and `options`.
 */
import { describe, expect, it } from 'vitest';
import { Differential, once } from './differential.js';

const diff = new Differential();

describe('pool.end (same as pg.Pool)', () => {
  it('promise form after some work; ending/ended; remove events', async () => {
    await diff.expectSame({ max: 2 }, async ({ pool, rec }) => {
      const a = await pool.connect();
      const b = await pool.connect();
      a.release();
      b.release();
      const ending = pool.end();
      rec.step('end asked');
      await rec.settle('ended', ending);
    });
  });

  it('a second end() rejects; the callback form gets the error', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      await pool.query('SELECT 1');
      const first = pool.end();
      await rec.settle('second, promise', pool.end());
      const second = rec.callback<[(Error | undefined)?]>('second, callback');
      pool.end(second.cb);
      await second.called;
      await rec.settle('first', first);
    });
  });

  it('callback form: called once everything is closed', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      await pool.query('SELECT 1');
      const ended = rec.callback<[(Error | undefined)?]>('end callback');
      rec.step('returns', { value: pool.end(ended.cb) });
      await ended.called;
    });
  });

  it('query and connect after end are refused (promise and callback)', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      await pool.query('SELECT 1');
      await pool.end();
      await rec.settle('query', pool.query('SELECT 1'));
      await rec.settle('connect', pool.connect());
      const connected = rec.callback<unknown[]>('connect callback');
      pool.connect(connected.cb);
      await connected.called;
      const queried = rec.callback<unknown[]>('query callback');
      pool.query('SELECT 1', queried.cb);
      await queried.called;
    });
  });

  it('end() waits for a checked-out client; its release closes it and ends the pool', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const held = await pool.connect();
      await pool.query('SELECT 1'); // a second, idle client
      const ending = pool.end();
      const removed = once(pool, 'remove');
      rec.step('end asked');
      await removed;
      rec.step('idle client removed');
      rec.step('held client still works', (await held.query('SELECT 2 AS two')).rows);
      held.release();
      rec.step('released');
      await rec.settle('ended', ending);
    });
  });

  it('work asked for before end() still runs (query, then end at once)', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const query = pool.query('SELECT 1 AS one');
      const ending = pool.end();
      rec.step('both asked');
      await rec.settle('query', query);
      await rec.settle('end', ending);
    });
  });
});

describe('pool.end with a waiter: hotload-pg differs on purpose', () => {
  // pg-pool's end() only removes clients: a checkout still queued when the last client is
  // released is never served nor failed (its promise stays pending forever) while end()
  // resolves. hotload-pg fails queued checkouts at end() with pg's own "Cannot use a pool
  // after calling end on the pool", so no caller is left waiting on a pool that is gone.
  it('pg.Pool strands the waiter; hotload-pg rejects it', async () => {
    const recordings = await diff.record({ max: 1 }, async ({ pool, rec }) => {
      const held = await pool.connect();
      let waiter: unknown = 'pending';
      pool.query('SELECT 3 AS three').then(
        () => (waiter = 'served'),
        (error: Error) => (waiter = error.message),
      );
      const ending = pool.end();
      held.release();
      await rec.settle('end', ending);
      await new Promise((resolve) => setImmediate(resolve));
      rec.step('waiter', { waiter });
    });
    const waiterOf = (kind: keyof typeof recordings) =>
      recordings[kind].find((entry) => 'step' in entry && entry.step === 'waiter');
    expect(waiterOf('pg.Pool')).toMatchObject({ value: { waiter: 'pending' } });
    for (const kind of ['hotload static', 'hotload source'] as const) {
      expect(waiterOf(kind)).toMatchObject({
        value: { waiter: 'Cannot use a pool after calling end on the pool' },
      });
    }
  });
});

describe('constructor options (same as pg.Pool)', () => {
  const visible = (options: Record<string, unknown>) => ({
    max: options.max,
    min: options.min,
    maxUses: options.maxUses,
    allowExitOnIdle: options.allowExitOnIdle,
    maxLifetimeSeconds: options.maxLifetimeSeconds,
    idleTimeoutMillis: options.idleTimeoutMillis,
    connectionTimeoutMillis: options.connectionTimeoutMillis,
    passwordEnumerable: Object.keys(options).includes('password'),
  });

  it('defaults', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      await pool.query('SELECT 1');
      rec.step('options', visible(pool.options as unknown as Record<string, unknown>));
    });
  });

  it('given values', async () => {
    const options = {
      max: 3,
      maxUses: 7,
      idleTimeoutMillis: 1234,
      connectionTimeoutMillis: 4321,
      maxLifetimeSeconds: 60,
    };
    await diff.expectSame(options, async ({ pool, rec }) => {
      await pool.query('SELECT 1');
      rec.step('options', visible(pool.options as unknown as Record<string, unknown>));
    });
  });
});
