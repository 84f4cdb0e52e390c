/**
 * Errors of one client, differentially: an `error` on an idle client and on a checked-out
 * one, a client whose connection or session was ended under the pool, a socket closed in
 * the background, and a Client class whose connect fails.
 */
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import { describe, it } from 'vitest';
import { Differential, once } from './differential.js';

const diff = new Differential();

/** Records the pool's counters with what the listeners of `client` and of the pool heard. */
function emitOn(client: pg.PoolClient, pool: pg.Pool): { clientHeard?: string; poolHeard?: unknown } {
  const heard: { clientHeard?: string; poolHeard?: unknown } = {};
  const onPoolError = (err: Error & { client?: unknown }, errClient: unknown) => {
    heard.poolHeard = {
      message: err.message,
      withClient: errClient === client,
      errClient: err.client === client,
    };
  };
  pool.once('error', onPoolError);
  client.once('error', (err) => (heard.clientHeard = err.message));
  client.emit('error', new Error('expected'));
  pool.removeListener('error', onPoolError);
  return heard;
}

describe("a client's error event (same as pg.Pool)", () => {
  it('on an idle client: the pool emits it with the client and drops the client at once', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      client.release();
      await new Promise((resolve) => process.nextTick(resolve));
      rec.step('heard', emitOn(client, pool));
      await rec.allRemoved();
      await rec.settle('next query', pool.query('SELECT 1 AS one'));
    });
  });

  it('on a checked-out client: the pool stays silent and keeps the client', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      rec.step('heard', emitOn(client, pool));
      client.release();
      rec.step('released');
    });
  });
});

describe('a client ended under the pool (same as pg.Pool)', () => {
  it('its connection ended while checked out: it errors, and release() drops it at once', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      const client = await pool.connect();
      const errored = once(client as unknown as pg.Pool, 'error');
      client.connection.end();
      await errored;
      rec.step('client errored');
      client.release();
      rec.step('released');
      await rec.settle('next query', pool.query('SELECT 1 AS one'));
    });
  });

  it('client.end() while checked out: release() drops it at once', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      const client = await pool.connect();
      const ended = client.end();
      client.release();
      rec.step('released');
      await ended;
      await rec.settle('next query', pool.query('SELECT 1 AS one'));
    });
  });

  it('an idle socket closed in the background: the pool goes on serving', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      const client = await pool.connect();
      await client.query('SELECT 1');
      client.release();
      const removed = once(pool, 'remove');
      client.connection.stream.end();
      await removed;
      rec.step('removed');
      for (const n of [1, 2, 3]) await rec.settle(`query ${n}`, pool.query('SELECT 1 AS one'));
    });
  });
});

describe('a Client class whose connect fails (same as pg.Pool)', () => {
  it('at once, with a connect callback that throws: the throw reaches the caller, the pool goes on', async () => {
    // pg-pool calls back inside connect() when the client answers at once. (Not with a
    // source: a checkout asked before its first read is answered later, by the pool.)
    function AnsweringClient() {
      return Object.assign(new EventEmitter(), {
        connect: (cb: (err: Error) => void) => cb(new Error('refused at once')),
      });
    }
    await diff.expectSame(
      { Client: AnsweringClient, max: 1 } as unknown as pg.PoolConfig,
      async ({ pool, rec }) => {
        try {
          pool.connect((err) => {
            throw new Error(`callback threw after: ${err?.message}`);
          });
          rec.step('connect returned');
        } catch (error) {
          rec.step('connect threw', error);
        }
        await rec.settle('next connect', pool.connect());
      },
      { kinds: ['pg.Pool', 'hotload static'] },
    );
  });

  it('no connect event; the checkout fails with its error, nothing counted', async () => {
    // The shape of client pg-pool needs: an EventEmitter with connect().
    function FailingClient() {
      return Object.assign(new EventEmitter(), {
        connect: (cb: (err: Error) => void) => process.nextTick(() => cb(new Error('bad news'))),
      });
    }
    await diff.expectSame({ Client: FailingClient } as unknown as pg.PoolConfig, async ({ pool, rec }) => {
      await rec.settle('connect', pool.connect());
      const queried = rec.callback<unknown[]>('query callback');
      pool.query('SELECT 1', queried.cb);
      await queried.called;
    });
  });
});
