/**
 * The connection budget across a switch, against real PostgreSQL: all generations of a
 * pool together hold at most `max + 1` connections (the `+ 1` being the verify
 * connection, which the new generation then serves with), however slowly the old
 * generation drains. Connections are counted by their sockets, from the connect call to
 * the socket's close, on every connect.
 */
import { Pool } from 'hotload-pg';
import { nextEvent, type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { configFor } from './helpers.js';

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

/** Sockets of every client a pool makes, open from `connect()` until their `end` event; the peak seen at each connect. */
class SocketCount {
  open = 0;
  peak = 0;

  clientClass(): typeof pg.Client {
    const count = this;
    return class CountedClient extends pg.Client {
      override connect(...args: never[]): never {
        count.open++;
        count.peak = Math.max(count.peak, count.open);
        this.once('end', () => count.open--);
        return (super.connect as (...a: never[]) => never)(...args);
      }
    };
  }
}

it('holds at most max + 1 connections across a switch with transactions held on the old generation and waiters on the new; no query fails', async () => {
  const max = 4;
  const sockets = new SocketCount();
  const pool = new Pool({
    ...cluster.connectionConfig(),
    max,
    Client: sockets.clientClass(),
    hotload: { drainTimeoutMillis: 60_000 },
  });
  // The old generation full: three slow transactions held open, one idle connection.
  const held = await Promise.all(Array.from({ length: max }, () => pool.connect()));
  for (const client of held.slice(1)) await client.query('BEGIN');
  held[0]!.release();
  const drained = nextEvent(pool, 'drained');
  expect(await pool.switchTo(configFor(cluster, { applicationName: 'budget-next' }))).toBe(true);

  // Waiters on the new generation: the verified connection serves the first (pg-pool
  // hands an idle client over on the next tick, counting it as waiting meanwhile); the
  // others wait for budget, since the old generation's three held connections plus it
  // make max. Without the budget, three of them would open connections at once.
  const answers = Array.from({ length: 2 * max }, () =>
    pool
      .query("SELECT current_setting('application_name') AS app")
      .then((result) => result.rows[0].app as string),
  );
  expect(pool.waitingCount).toBe(2 * max);
  expect(sockets.open).toBeLessThanOrEqual(max + 1);

  // The old generation shrinks one transaction at a time; the new one grows as it does.
  for (const client of held.slice(1)) {
    await client.query('COMMIT');
    client.release();
    await answers[0];
  }
  expect(await Promise.all(answers)).toEqual(Array(2 * max).fill('budget-next'));
  await drained;
  await pool.end();
  expect(sockets.peak).toBeLessThanOrEqual(max + 1);
  // The +1 was used: the verify connection opened while the old generation held max.
  expect(sockets.peak).toBe(max + 1);
});
