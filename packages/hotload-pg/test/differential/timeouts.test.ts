/**
 * connectionTimeoutMillis, differentially. Scenarios compare the error a caller gets (and
 * the callback's arguments), never how long it took.
 */
import { FaultProxy } from 'hotload-test-support';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { Differential } from './differential.js';

const diff = new Differential();
let proxy: FaultProxy;
beforeAll(async () => {
  proxy = await FaultProxy.start({ host: diff.cluster.host, port: diff.cluster.port });
});
afterAll(async () => {
  await proxy?.close();
});
const viaProxy = { target: () => ({ host: '127.0.0.1', port: proxy.port }) };

describe('connectionTimeoutMillis (same as pg.Pool)', () => {
  it('all clients busy: a queued checkout times out (promise), the held client is unaffected', async () => {
    await diff.expectSame({ max: 1, connectionTimeoutMillis: 1000 }, async ({ pool, rec }) => {
      const held = await pool.connect();
      const queued = pool.connect();
      rec.step('queued');
      await rec.settle('queued checkout', queued);
      rec.step('held still works', (await held.query('SELECT 1 AS one')).rows);
      held.release();
      await rec.settle('next query', pool.query('SELECT 2 AS two'));
    });
  });

  it('all clients busy: the callback form gets the timeout error', async () => {
    await diff.expectSame({ max: 1, connectionTimeoutMillis: 1000 }, async ({ pool, rec }) => {
      const held = await pool.connect();
      const timedOut = rec.callback<unknown[]>('callback');
      pool.connect(timedOut.cb);
      await timedOut.called;
      held.release();
    });
  });

  it('all clients busy: a queued pool.query times out', async () => {
    await diff.expectSame({ max: 1, connectionTimeoutMillis: 1000 }, async ({ pool, rec }) => {
      const held = await pool.connect();
      await rec.settle('queued query', pool.query('SELECT 1'));
      held.release();
    });
  });

  it('a server that never answers the handshake: the new connection times out', async () => {
    await diff.expectSame(
      { connectionTimeoutMillis: 1000 },
      async ({ pool, rec }) => {
        await proxy.resume();
        proxy.stall();
        await rec.settle('query', pool.query('SELECT 1'));
        await proxy.resume();
        await rec.settle('after resume', pool.query('SELECT 2 AS two'));
      },
      // With a source, this is the pool's first checkout, asked before the first read of the
      // source: the generation's pg-pool times its connection, so the error has pg's `cause`
      // and the client is no longer counted when the caller hears of it.
      viaProxy,
    );
  });

  it('the timeout bounds the whole wait: a queued checkout that then needs a new connection', async () => {
    // The waiter's clock starts when it queues; handing it a new connection later does not
    // restart it, so it gets the queue's timeout error, not the connection's.
    await diff.expectSame(
      { max: 1, connectionTimeoutMillis: 1000 },
      async ({ pool, rec }) => {
        await proxy.resume();
        const held = await pool.connect();
        const queued = pool.connect();
        proxy.stall();
        held.release(true); // gone: the waiter needs a new connection, which stalls
        await rec.settle('queued checkout', queued);
        await proxy.resume();
      },
      viaProxy,
    );
  });
});
