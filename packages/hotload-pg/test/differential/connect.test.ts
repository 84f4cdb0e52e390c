/**
 * pool.connect and client.release, differentially: promise and callback forms, release(),
 * release(err), release(true), double release, the wait queue and maxUses.
 */
import pg from 'pg';
import { describe, it } from 'vitest';
import { Differential, once } from './differential.js';

const diff = new Differential();

type ConnectArgs = [Error | undefined, pg.PoolClient | undefined, (release?: unknown) => void];

describe('pool.connect (same as pg.Pool)', () => {
  it('promise form: a transaction on the client, release(), reuse', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const connecting = pool.connect();
      rec.step('connect asked');
      const client = (await rec.settle('connected', connecting))!;
      await client.query('BEGIN');
      await client.query('CREATE TEMP TABLE t (v int)');
      await client.query('INSERT INTO t VALUES (1), (2)');
      rec.step('in transaction', (await client.query('SELECT count(*)::int AS n FROM t')).rows);
      await client.query('COMMIT');
      rec.step('release returns', { value: client.release() });
      const again = (await rec.settle('reused', pool.connect()))!;
      again.release();
      rec.step('released again');
    });
  });

  it('callback form: arguments (err, client, done); done() gives it back', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const connected = rec.callback<ConnectArgs>('callback');
      rec.step('returns', { value: pool.connect(connected.cb) });
      const [, client, done] = await connected.called;
      rec.step('done is release', { same: done === client?.release });
      done();
      rec.step('after done');
    });
  });

  it('release(err) and release(true) destroy the client (release, then remove)', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const a = await pool.connect();
      const removedA = once(pool, 'remove');
      a.release(new Error('broken'));
      rec.step('released with an error');
      await removedA;
      rec.step('removed');
      const b = await pool.connect();
      const removedB = once(pool, 'remove');
      b.release(true);
      rec.step('released with true');
      await removedB;
      rec.step('removed again');
    });
  });

  it('a second release throws', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      const client = await pool.connect();
      client.release();
      try {
        client.release();
        rec.step('second release did not throw');
      } catch (error) {
        rec.step('second release threw', error);
      }
    });
  });

  it('checkouts beyond max wait in order; a release hands the client straight to the first waiter', async () => {
    await diff.expectSame({ max: 2 }, async ({ pool, rec }) => {
      const a = await pool.connect();
      const b = await pool.connect();
      const order: string[] = [];
      const served = (name: string) => (client: pg.PoolClient) => {
        order.push(name);
        return client;
      };
      const third = pool.connect().then(served('third'));
      const fourth = pool.connect().then(served('fourth'));
      rec.step('two waiting');
      a.release();
      rec.step('a released');
      const c = await third;
      rec.step('third served', { client: rec.idOf('client', c) });
      b.release();
      const d = await fourth;
      rec.step('fourth served', { order, client: rec.idOf('client', d) });
      c.release();
      d.release();
      rec.step('all released');
    });
  });

  it('maxUses: a client is removed after its last use and a waiter gets a new one', async () => {
    await diff.expectSame({ max: 1, maxUses: 2 }, async ({ pool, rec }) => {
      await rec.settle('first use', pool.query('SELECT 1 AS n'));
      const a = await pool.connect();
      const waiting = pool.connect();
      const removed = once(pool, 'remove');
      a.release();
      rec.step('spent client released');
      await removed;
      const b = await waiting;
      rec.step('waiter served', { client: rec.idOf('client', b) });
      b.release();
    });
  });

  it('a callback is never called synchronously, even with an idle client', async () => {
    await diff.expectSame({}, async ({ pool, rec }) => {
      (await pool.connect()).release();
      let called = false;
      const connected = new Promise<pg.PoolClient>((resolve) =>
        pool.connect((_err, client) => {
          called = true;
          resolve(client!);
        }),
      );
      rec.step('right after connect(cb)', { called });
      (await connected).release();
    });
  });

  it('pool.options.max raised at run time: the pool grows (pg-pool reads it live)', async () => {
    await diff.expectSame({ max: 1 }, async ({ pool, rec }) => {
      await pool.query('SELECT 1');
      pool.options.max = 2;
      const a = await pool.connect();
      const b = await pool.connect();
      rec.step('two checked out', { clients: [rec.idOf('client', a), rec.idOf('client', b)] });
      a.release();
      b.release();
    });
  });

  it('the Client option: clients are built from the given class', async () => {
    class TaggedClient extends pg.Client {
      readonly tag = 'tagged';
    }
    await diff.expectSame({ Client: TaggedClient } as pg.PoolConfig, async ({ pool, rec }) => {
      const client = await pool.connect();
      rec.step('client class', { tagged: client instanceof TaggedClient });
      client.release();
    });
  });
});
