/**
 * The connection budget across a switch, against real PostgreSQL: all generations of a
 * HotloadGenericPool together hold at most `max + 1` clients (the `+ 1` being the verify
 * client, which the new generation then serves with), however slowly the old generation
 * drains. Clients are counted by their sockets, from the factory's create to pg's `end`.
 */
import type { ClientFactory } from 'hotload-generic-pool';
import { nextEvent, useAppDatabases } from 'hotload-test-support';
import type pg from 'pg';
import { expect, it } from 'vitest';
import { pgClientFactory } from '../../../test/contract/pg-client-factory.js';
import { hotloadGenericPool } from './pool-subjects.js';

const suite = useAppDatabases();

/** pgClientFactory, counting open sockets (the peak taken at each create). */
function countingFactory() {
  const count = { open: 0, peak: 0 };
  const factory: ClientFactory<pg.Client> = {
    ...pgClientFactory,
    async create(config, host, signal) {
      count.open++;
      count.peak = Math.max(count.peak, count.open);
      try {
        const client = await pgClientFactory.create(config, host, signal);
        client.once('end', () => count.open--);
        return client;
      } catch (error) {
        count.open--;
        throw error;
      }
    },
  };
  return { count, factory };
}

it('holds at most max + 1 clients across a switch with transactions held on the old generation and waiters on the new; no checkout fails', async () => {
  const max = 3;
  const { count, factory } = countingFactory();
  const subject = await hotloadGenericPool({
    server: suite.clusters[0]!,
    user: 'app_a',
    password: suite.passwords.app_a,
    secretDirectory: suite.secret.path,
    pool: { max },
    factory,
  });
  const pool = subject.hotload;
  try {
    // The old generation full: two slow transactions held open, one idle client.
    const held = await Promise.all(Array.from({ length: max }, () => pool.acquire()));
    for (const client of held.slice(1)) await client.query('BEGIN');
    await pool.release(held[0]!);
    const switched = nextEvent(pool.hotload, 'switch');
    const drained = nextEvent(pool.hotload, 'drained');
    await suite.rotateOnServer('app_b');
    await suite.publish(suite.clusters[0]!, 'app_b');
    await switched;

    // Waiters on the new generation: the verify client serves the first, the others wait
    // for the old generation's held clients to go.
    const served = Array.from({ length: 2 * max }, async () => {
      const client = await pool.acquire();
      const user = (await client.query('SELECT session_user AS u')).rows[0]?.u as string;
      await pool.release(client);
      return user;
    });
    for (const client of held.slice(1)) {
      await client.query('COMMIT');
      await pool.release(client);
    }
    expect(await Promise.all(served)).toEqual(Array(2 * max).fill('app_b'));
    await drained;
    expect(count.peak).toBeLessThanOrEqual(max + 1);
    // The +1 was used: the verify client opened while the old generation held max.
    expect(count.peak).toBe(max + 1);
  } finally {
    await pool.end();
  }
});

it('serves a checkout queued in the old generation at the switch from the new one, without waiting for the old generation’s slow clients', async () => {
  const max = 3;
  const { factory } = countingFactory();
  const subject = await hotloadGenericPool({
    server: suite.clusters[0]!,
    user: 'app_b',
    password: suite.passwords.app_b,
    secretDirectory: suite.secret.path,
    pool: { max },
    factory,
  });
  const pool = subject.hotload;
  try {
    await suite.publish(suite.clusters[0]!, 'app_b');
    // The old generation full (two slow transactions, one client in use) and a checkout
    // queued inside its generic-pool.
    const [slow1, slow2, inUse] = await Promise.all(Array.from({ length: max }, () => pool.acquire()));
    for (const client of [slow1!, slow2!]) await client.query('BEGIN');
    const queued = pool.acquire();
    const switched = nextEvent(pool.hotload, 'switch');
    await suite.rotateOnServer('app_a');
    await suite.publish(suite.clusters[0]!, 'app_a');
    await switched;
    // The client in use comes back and is closed (its generation is retired); the queued
    // checkout then needs a new client: not one of the retired generation, which would
    // wait for budget the slow transactions hold, but one of the serving generation.
    await pool.release(inUse!);
    const served = await queued;
    expect((await served.query('SELECT session_user AS u')).rows[0]?.u).toBe('app_a');
    await pool.release(served);
    for (const client of [slow1!, slow2!]) {
      await client.query('COMMIT');
      await pool.release(client);
    }
  } finally {
    await pool.end();
  }
});
