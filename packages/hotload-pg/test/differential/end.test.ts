/**
 * pool.end, differentially: promise and callback forms, a second call, use after end,
 * end with a client still checked out, work asked for just before end, and `options`.
 */
import { describe, expect, it } from 'vitest';
import { Differential } from './differential.js';
import type { Recorder } from './recorder.js';

const diff = new Differential();

// hotload-pg's end() settles once every connection of every generation is closed (after
// the `remove` events; `ended` turns true then, and idle clients count until their socket
// is gone). pg-pool's end() settles as soon as it has *asked* its clients to close (before
// the `remove` events). So these scenarios leave `remove` out of the event order, record
// the steps of the ending window without counters, and compare, after everything closed,
// how many clients were removed. The difference itself is asserted in the last block.
const endRun = { ignoreEvents: ['remove'] };

/** Records how `ending` settled, then, once every client is removed, how many were. */
async function settleEnd(rec: Recorder, step: string, ending: Promise<void>): Promise<void> {
  await rec.settle(step, ending);
  await rec.allRemoved();
  rec.step('all removed', { removed: rec.removed });
}

describe('pool.end (same as pg.Pool, but for when it settles)', () => {
  it('promise form after some work', async () => {
    await diff.expectSame(
      { max: 2 },
      async ({ pool, rec }) => {
        const a = await pool.connect();
        const b = await pool.connect();
        a.release();
        b.release();
        const ending = pool.end();
        rec.note('end asked', { ending: pool.ending });
        await settleEnd(rec, 'ended', ending);
      },
      endRun,
    );
  });

  it('a second end() rejects; the callback form gets the error', async () => {
    await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        await pool.query('SELECT 1');
        const first = pool.end();
        await pool.end().then(
          () => rec.note('second, promise: resolved'),
          (error: Error) => rec.note('second, promise: rejected', error),
        );
        await new Promise<void>((resolve) =>
          pool.end((...args: unknown[]) => {
            rec.note('second, callback', { callbackArgs: args });
            resolve();
          }),
        );
        await settleEnd(rec, 'first', first);
      },
      endRun,
    );
  });

  it('callback form: called with no arguments once closed', async () => {
    await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        await pool.query('SELECT 1');
        let args: unknown[] | undefined;
        const ended = new Promise<void>((resolve) =>
          pool.end((...received: unknown[]) => {
            args = received;
            resolve();
          }),
        );
        await ended;
        rec.step('end callback', { args });
        await rec.allRemoved();
      },
      endRun,
    );
  });

  it('query and connect after end are refused (promise and callback)', async () => {
    await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        await pool.query('SELECT 1');
        await pool.end();
        await rec.allRemoved();
        await rec.settle('query', pool.query('SELECT 1'));
        await rec.settle('connect', pool.connect());
        const connected = rec.callback<unknown[]>('connect callback');
        pool.connect(connected.cb);
        await connected.called;
        const queried = rec.callback<unknown[]>('query callback');
        pool.query('SELECT 1', queried.cb);
        await queried.called;
      },
      endRun,
    );
  });

  it('once end() is called, query, connect and end call back at once (synchronously)', async () => {
    await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        await pool.query('SELECT 1');
        const ending = pool.end();
        const calls: string[] = [];
        const refuse = () => {
          pool.query('SELECT 1', (err: Error) => void calls.push(`query: ${err.message}`));
          pool.connect((err) => void calls.push(`connect: ${err?.message}`));
        };
        refuse();
        pool.end((err?: Error) => void calls.push(`end: ${err?.message}`));
        rec.note('called back before returning, while ending', [...calls]);
        await ending;
        calls.length = 0;
        refuse();
        rec.note('called back before returning, ended', [...calls]);
        await rec.allRemoved();
      },
      endRun,
    );
  });

  it('end() waits for a checked-out client; its release closes it and ends the pool', async () => {
    await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        const held = await pool.connect();
        await pool.query('SELECT 1'); // a second, idle client
        let ended = false;
        const ending = pool.end().then(() => {
          ended = true;
        });
        await new Promise<void>((resolve) => pool.once('remove', () => resolve()));
        rec.step('idle client removed, end pending', { ended });
        rec.step('held client still works', (await held.query('SELECT 2 AS two')).rows);
        held.release();
        await settleEnd(rec, 'ended', ending);
      },
      endRun,
    );
  });

  it('work asked for before end() still runs (query, then end at once)', async () => {
    await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        const query = pool.query('SELECT 1 AS one');
        const ending = pool.end();
        rec.step('both asked');
        await rec.settle('query', query);
        await settleEnd(rec, 'end', ending);
      },
      endRun,
    );
  });
});

describe('when end() settles: hotload-pg differs on purpose', () => {
  // A hotload pool may hold several generations (one serving, others draining or being
  // verified); end() settles once all of their sockets are closed, so nothing of the pool
  // outlives it (a program that stops the server or exits right after sees no connection
  // reset). pg-pool settles when it has asked its idle clients to close.
  it('pg.Pool: ended at once, removes after; hotload-pg: removes first, then ended', async () => {
    const recordings = await diff.record({ max: 2 }, async ({ pool, rec }) => {
      const a = await pool.connect();
      const b = await pool.connect();
      a.release();
      b.release();
      const ending = pool.end();
      rec.step('end asked');
      await ending;
      rec.step('end settled', { removedBefore: rec.removed });
      await rec.allRemoved();
    });
    const stepOf = (kind: keyof typeof recordings, name: string) =>
      recordings[kind].find((entry) => 'step' in entry && entry.step === name);
    expect(stepOf('pg.Pool', 'end asked')).toMatchObject({ state: { total: 0, idle: 0, ended: true } });
    expect(stepOf('pg.Pool', 'end settled')).toMatchObject({ value: { removedBefore: 0 } });
    for (const kind of ['hotload static', 'hotload source'] as const) {
      expect(stepOf(kind, 'end asked')).toMatchObject({ state: { total: 2, idle: 2, ended: false } });
      expect(stepOf(kind, 'end settled')).toMatchObject({
        value: { removedBefore: 2 },
        state: { total: 0, ended: true },
      });
    }
  });
});

describe('pool.end with a waiter: hotload-pg differs on purpose', () => {
  // pg-pool's end() only removes clients: a checkout still queued when the last client is
  // released is never served nor failed (its promise stays pending forever) while end()
  // resolves. hotload-pg serves work asked for before end() (as pg.Pool does when a client
  // is free), so the queued checkout gets the released client and end() settles after it.
  it('pg.Pool strands the waiter; hotload-pg serves it', async () => {
    const recordings = await diff.record({ max: 1 }, async ({ pool, rec }) => {
      const held = await pool.connect();
      let waiter: unknown = 'pending';
      pool.query('SELECT 3 AS three').then(
        () => {
          waiter = 'served';
        },
        (error: Error) => {
          waiter = error.message;
        },
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
      expect(waiterOf(kind)).toMatchObject({ value: { waiter: 'served' } });
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
