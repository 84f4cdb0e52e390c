/**
 * pg.Pool's `Promise` option ("bring your own promise") and falsy callbacks,
 * differentially: without a callback, `connect`, `query` and `end` return promises of the
 * pool's `Promise` class, for failures too, and a falsy callback (`end(false)`,
 * `query(text, null)`) means "no callback", as pg-pool tests with `if (callback)`.
 */
import type pg from 'pg';
import { describe, it } from 'vitest';
import { Differential } from './differential.js';
import type { Recorder } from './recorder.js';

const diff = new Differential();
// pg-pool's end() settles before its clients' `remove` events, hotload-pg's after (see
// end.test.ts): scenarios that end the pool compare the events without `remove`.
const endRun = { ignoreEvents: ['remove'] };

/** A promise class of the program's own, recognisable by `instanceof`. */
class TaggedPromise<T> extends Promise<T> {}

/**
 * Records whether `returned` is a TaggedPromise, a plain promise or nothing, then how it
 * settled. The kind is noted without the counters: right after `end()` pg-pool counts its
 * clients as gone and hotload-pg until their sockets are (see end.test.ts).
 */
async function settleTagged(rec: Recorder, step: string, returned: unknown): Promise<void> {
  const kind =
    returned instanceof TaggedPromise
      ? 'TaggedPromise'
      : returned instanceof Promise
        ? 'Promise'
        : typeof returned;
  rec.note(`${step}: returned`, { kind });
  await rec.settle(step, returned as Promise<unknown>);
}

/** pg.Pool's methods as JavaScript callers may call them (falsy callbacks), outside pg's typings. */
interface LoosePool {
  connect(cb: null): Promise<pg.PoolClient>;
  query(text: string, cb: null): Promise<pg.QueryResult>;
  query(text: string, values: unknown[], cb: null): Promise<pg.QueryResult>;
  end(cb: false): Promise<void>;
}

describe('the Promise option (same as pg.Pool)', () => {
  it('connect, query and end return promises of the given class', async () => {
    await diff.expectSame(
      { Promise: TaggedPromise },
      async ({ pool, rec }) => {
        rec.step('pool.Promise is the option', {
          same: (pool as { Promise?: unknown }).Promise === TaggedPromise,
        });
        const connecting = pool.connect();
        await settleTagged(rec, 'connect', connecting);
        (await connecting).release();
        await settleTagged(rec, 'query', pool.query('SELECT 1 AS one'));
        await settleTagged(rec, 'query error', pool.query('SELECT * FROM no_such_table'));
        await settleTagged(rec, 'end', pool.end());
        await rec.allRemoved();
      },
      endRun,
    );
  });

  it('refusals of an ended pool are promises of the given class too', async () => {
    await diff.expectSame(
      { Promise: TaggedPromise },
      async ({ pool, rec }) => {
        await pool.query('SELECT 1');
        await pool.end();
        await rec.allRemoved();
        await settleTagged(rec, 'connect after end', pool.connect());
        await settleTagged(rec, 'query after end', pool.query('SELECT 1'));
        await settleTagged(rec, 'end again', pool.end());
      },
      endRun,
    );
  });

  it('without the option: global promises', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      rec.step('pool.Promise is the global one', {
        same: (pool as { Promise?: unknown }).Promise === Promise,
      });
      await settleTagged(rec, 'query', pool.query('SELECT 1 AS one'));
    });
  });
});

describe('falsy callbacks mean the promise form (same as pg.Pool)', () => {
  it('connect(null), query(text, null), query(text, values, null), end(false)', async () => {
    await diff.expectSame(
      {},
      async ({ pool, rec }) => {
        const loose = pool as unknown as LoosePool;
        const connecting = loose.connect(null);
        await settleTagged(rec, 'connect(null)', connecting);
        (await connecting).release();
        await settleTagged(rec, 'query(text, null)', loose.query('SELECT 1 AS one', null));
        await settleTagged(rec, 'query(text, values, null)', loose.query('SELECT $1::int AS n', [2], null));
        await settleTagged(rec, 'end(false)', loose.end(false));
        await rec.allRemoved();
      },
      endRun,
    );
  });
});
