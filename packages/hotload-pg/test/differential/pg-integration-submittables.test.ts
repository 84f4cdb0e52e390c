/**
 * `pool.query(submittable)` when things go wrong, and with pg's own `Query` (node-postgres'
 * `client/error-handling-tests` and gh-issues 131 and 2560 submit `new pg.Query(...)`).
 *
 * What the program hears from the submittable (its `error` event, its own callback, a
 * cursor's read) is the same as with pg.Pool. Where the client goes after is the
 * documented difference (README, difference 10): pg-pool never gives it back; hotload-pg
 * gives it back when the submittable is done, with the error when it failed (so a client
 * that failed is removed, as after a failed `pool.query`).
 */

import type pg from 'pg';
import { Query } from 'pg';
import Cursor from 'pg-cursor';
import { describe, expect, it } from 'vitest';
import { Differential, once, POOL_KINDS, type PoolKind } from './differential.js';
import type { Entry, PoolState } from './recorder.js';
import { untilRunning } from './server-activity.js';

const diff = new Differential();
const HOTLOAD_KINDS = ['hotload static', 'hotload source'] as const;

type Scenario = Parameters<Differential['record']>[1];

/**
 * Records `scenario`, then (pg.Pool only) ends the session of the client pg-pool never
 * gave back, so its end() can finish. Returns each pool's recording.
 */
async function recordSubmittable(scenario: Scenario): Promise<Record<PoolKind, Entry[]>> {
  return diff.record({ max: 1 }, async (context) => {
    const { pool, rec, cluster } = context;
    await scenario(context);
    rec.step('done');
    if (pool.totalCount === pool.idleCount) return;
    const removed = new Promise((resolve) => pool.once('remove', resolve));
    await cluster.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [
      'app_a',
    ]);
    await removed;
  });
}

/** What the program heard: the entries recorded without the pool's state. */
function heard(entries: Entry[]): Entry[] {
  return entries.filter((entry) => 'step' in entry && entry.state === undefined);
}

function stateWhenDone(entries: Entry[]): PoolState | undefined {
  const done = entries.find((entry) => 'step' in entry && entry.step === 'done');
  return done && 'state' in done ? done.state : undefined;
}

/** pg.Pool's promise for a submittable settles only with a client error: kept quiet. */
function quiet(returned: unknown): void {
  if (returned instanceof Promise) returned.catch(() => {});
}

/** Asserts the same was heard everywhere and where each pool's client went. */
function expectHeardAlike(recordings: Record<PoolKind, Entry[]>, hotloadState: Partial<PoolState>): void {
  const original = heard(recordings['pg.Pool']);
  expect(original.length).toBeGreaterThan(0);
  expect(stateWhenDone(recordings['pg.Pool'])).toMatchObject({ total: 1, idle: 0 }); // never given back
  for (const kind of HOTLOAD_KINDS) {
    expect(heard(recordings[kind]), kind).toEqual(original);
    expect(stateWhenDone(recordings[kind]), kind).toMatchObject(hotloadState);
  }
}

describe('pool.query(new pg.Query(...)): heard as with pg.Pool; the client given back (difference 10)', () => {
  // pg 8.23's Client gives a Query without a callback the one pg-pool passes, so pg.Pool's
  // promise settles with the Query's outcome and the Query emits no 'error'. hotload-pg
  // returns the Query itself (as `@types/pg` declares): it leaves it no callback, so the
  // Query reports through its own events, the error included (not swallowed).
  it("a failing Query without a callback: pg.Pool's promise rejects; hotload's Query emits 'error' with the same error", async () => {
    const recordings = await recordSubmittable(async ({ pool, rec }) => {
      const query = new Query('SELEKT');
      const returned: unknown = pool.query(query as unknown as pg.Submittable);
      const reported = await Promise.race([
        new Promise((resolve) => query.once('error', (error) => resolve({ errorEvent: error }))),
        returned instanceof Promise
          ? returned.then(
              (result) => ({ promiseResolved: result }),
              (error: unknown) => ({ promiseRejected: error }),
            )
          : new Promise(() => {}),
      ]);
      rec.note('reported', reported);
    });
    const reported = (kind: PoolKind) => heard(recordings[kind])[0] as { value: Record<string, unknown> };
    const syntaxError = {
      error: 'DatabaseError',
      message: 'syntax error at or near "SELEKT"',
      code: '42601',
    };
    expect(reported('pg.Pool').value).toEqual({ promiseRejected: syntaxError });
    // Either way the failed client is given back with the error, so it is removed.
    for (const kind of POOL_KINDS) expect(stateWhenDone(recordings[kind]), kind).toMatchObject({ total: 0 });
    for (const kind of HOTLOAD_KINDS) expect(reported(kind).value, kind).toEqual({ errorEvent: syntaxError });
  });

  it('a Query with its own callback gets its result; the client goes back idle', async () => {
    const recordings = await recordSubmittable(async ({ pool, rec }) => {
      const args = await new Promise<unknown[]>((resolve) =>
        quiet(
          pool.query(
            new Query('SELECT $1::int AS n', [7], (...callbackArgs: unknown[]) =>
              resolve(callbackArgs),
            ) as unknown as pg.Submittable,
          ),
        ),
      );
      rec.note('own callback', args);
    });
    expectHeardAlike(recordings, { total: 1, idle: 1 });
  });

  it('a failing Query with its own callback gets the error there; the failed client is removed', async () => {
    const recordings = await recordSubmittable(async ({ pool, rec }) => {
      const args = await new Promise<unknown[]>((resolve) =>
        quiet(
          pool.query(
            new Query('SELECT * FROM no_such_table', [], (...callbackArgs: unknown[]) =>
              resolve(callbackArgs),
            ) as unknown as pg.Submittable,
          ),
        ),
      );
      rec.note('own callback', args);
    });
    expectHeardAlike(recordings, { total: 0, idle: 0 });
  });
});

describe('pool.query(cursor) that fails: heard as with pg.Pool; the client given back (difference 10)', () => {
  it('a cursor whose SQL fails rejects its read; the failed client is removed', async () => {
    const recordings = await recordSubmittable(async ({ pool, rec }) => {
      const cursor = new Cursor('SELECT * FROM no_such_table');
      quiet(pool.query(cursor as unknown as pg.Submittable));
      rec.note(
        'read',
        await cursor.read(1).then(
          (rows) => ({ rows }),
          (error: unknown) => ({ rejected: error }),
        ),
      );
    });
    expectHeardAlike(recordings, { total: 0, idle: 0 });
  });
});

describe('a socket error while a submittable runs (same as pg.Pool)', () => {
  it("is heard by the pool (no crash): the cursor's read fails with it and the client is removed", async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec, cluster }) => {
      const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const pid = rows[0]!.pid;
      const removed = once(pool, 'remove');
      const cursor = new Cursor('SELECT pg_sleep(30)');
      quiet(pool.query(cursor as unknown as pg.Submittable));
      const read = cursor.read(1).then(
        (readRows) => ({ rows: readRows }),
        (error: unknown) => ({ rejected: error }),
      );
      const clients = (pool as unknown as { _clients: pg.Client[] })._clients;
      try {
        await untilRunning(cluster, pid);
        clients[0]!.connection.stream.emit('error', new Error('network issue'));
        rec.step('read', await read);
        await removed;
        rec.step('removed');
      } finally {
        await cluster.query('SELECT pg_terminate_backend($1)', [pid]); // its sleep would outlive the test
      }
    });
  });
});
