/**
 * Clients leaving the pool, differentially: idleTimeoutMillis, maxLifetimeSeconds
 * (expiredCount), and a client the pool ends on release while a checkout waits for it
 * (released with an error, maxUses). Scenarios wait for the `remove` event, never a clock.
 */
import type pg from 'pg';
import { describe, it } from 'vitest';
import { Differential, once } from './differential.js';

const diff = new Differential();

describe('clients retired by the pool (same as pg.Pool)', () => {
  it('idleTimeoutMillis: an idle client is removed; the next query opens a new one', async () => {
    await diff.expectSame({ idleTimeoutMillis: 30 }, async ({ pool, rec }) => {
      const removed = once(pool, 'remove');
      await rec.settle('query', pool.query('SELECT 1 AS one'));
      await removed;
      rec.step('idle client removed');
      await rec.settle('next query', pool.query('SELECT 2 AS two'));
    });
  });

  it('idleTimeoutMillis: only idle clients go; a held one stays', async () => {
    await diff.expectSame({ idleTimeoutMillis: 30 }, async ({ pool, rec }) => {
      const held = await pool.connect();
      const removed = once(pool, 'remove');
      await pool.query('SELECT 1');
      await removed;
      rec.step('idle one removed');
      held.release();
      const removedToo = once(pool, 'remove');
      await removedToo;
      rec.step('released one removed after idling');
    });
  });

  it('maxLifetimeSeconds: idle expired clients are removed; a held one counts as expired and goes on release', async () => {
    await diff.expectSame({ maxLifetimeSeconds: 1 }, async ({ pool, rec }) => {
      const held = await pool.connect();
      const idle = await pool.connect();
      idle.release();
      const removed = once(pool, 'remove');
      rec.step('one held, one idle');
      await removed;
      // The held client connected first, so its lifetime ran out before the idle one's.
      rec.step('idle one expired and removed');
      const removedHeld = once(pool, 'remove');
      held.release();
      rec.step('held one released');
      await removedHeld;
      rec.step('held one removed');
    });
  });

  it('min: idle clients beyond min time out, min of them stay', async () => {
    await diff.expectSame({ min: 1, idleTimeoutMillis: 30 }, async ({ pool, rec }) => {
      const a = await pool.connect();
      const b = await pool.connect();
      const removed = once(pool, 'remove');
      a.release();
      b.release();
      await removed;
      rec.step('one removed, min kept');
      await rec.settle('served by the kept client', pool.query('SELECT 1 AS one'));
    });
  });

  // pg-pool serves a waiter once the client it ends has closed: its new connection comes
  // after that client's `remove`, and max sockets are never exceeded.
  for (const [how, options, release] of [
    [
      'released with an error',
      { max: 1 },
      (client: pg.PoolClient) => client.release(new Error('done with it')),
    ],
    ['retired by maxUses', { max: 1, maxUses: 1 }, (client: pg.PoolClient) => client.release()],
  ] as const) {
    it(`max reached, a checkout waits, the held client ${how}: the waiter gets a new connection after its remove`, async () => {
      await diff.expectSame(options, async ({ pool, rec }) => {
        const held = await pool.connect();
        const waiting = pool.connect();
        rec.step('one held, one waiting');
        release(held);
        // pg-pool: the old client is gone from totalCount, the checkout still waits.
        rec.step('just released');
        const waiter = await waiting;
        rec.step('waiter served', (await waiter.query('SELECT 1 AS one')).rows);
        waiter.release();
        await rec.settle('next query', pool.query('SELECT 2 AS two'));
      });
    });
  }
});
