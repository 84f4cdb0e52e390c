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
  // after that client's `remove`, and max sockets are never exceeded. In the hotload runs
  // every client the pool ends says goodbye late (as a slow socket close under load would),
  // so a waiter served before the remove would show as a connect before it.
  for (const [how, options, release, waiterRetired] of [
    [
      'released with an error',
      { max: 1 },
      (client: pg.PoolClient) => client.release(new Error('done with it')),
      false,
    ],
    ['retired by maxUses', { max: 1, maxUses: 1 }, (client: pg.PoolClient) => client.release(), true],
  ] as const) {
    it(`max reached, a checkout waits, the held client ${how}: the waiter gets a new connection after its remove`, async () => {
      await diff.expectSame(options, async ({ pool, rec, kind }) => {
        const lateBy = kind === 'pg.Pool' ? 0 : GOODBYE_LATE_MILLIS;
        const held = await pool.connect();
        const waiting = pool.connect();
        rec.step('one held, one waiting');
        closeLate(held, lateBy);
        release(held);
        // pg-pool: the old client is gone from totalCount, the checkout still waits.
        rec.step('just released');
        const waiter = await waiting;
        rec.step('waiter served', (await waiter.query('SELECT 1 AS one')).rows);
        // maxUses retires the waiter's client too, and nobody waits for it: its slot is free
        // at once (in pg.Pool too), so its remove and the next query's new connection would
        // race. The next query comes after the remove, which is what the recording shows.
        const retired = waiterRetired ? once(pool, 'remove') : undefined;
        if (waiterRetired) closeLate(waiter, lateBy);
        waiter.release();
        await retired;
        await rec.settle('next query', pool.query('SELECT 2 AS two'));
      });
    });
  }
});

/**
 * How late a retired client's goodbye is in the hotload runs: longer than a new
 * connection and a query take on loopback, so what comes before the remove shows.
 */
const GOODBYE_LATE_MILLIS = 300;

/**
 * Holds `client`'s goodbye (pg's Terminate and the socket's end, which pg-pool's end of a
 * client it retires sends) for `millis`: the pool's `remove` of it comes that much later.
 */
function closeLate(client: pg.PoolClient, millis: number): void {
  if (millis === 0) return;
  const connection = client.connection;
  const end = connection.end.bind(connection);
  connection.end = () => void setTimeout(end, millis);
}
