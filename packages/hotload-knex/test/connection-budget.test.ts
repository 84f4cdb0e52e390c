/**
 * The connection budget across a switch, against real PostgreSQL: all generations of a
 * hotload Knex together hold at most `max + 1` connections (the `+ 1` being the verify
 * connection, which the new generation then serves with), however slowly the old
 * generation drains, slow socket closes included. The server's count of the pool's
 * sessions (pg_stat_activity, by application_name) is sampled on every connection Knex's
 * pool gets (`afterCreate`).
 */
import { createHotloadKnex } from 'hotload-knex';
import { useAppDatabases } from 'hotload-test-support';
import { expect, it } from 'vitest';
import { nextEvent } from './knex-helpers.js';

const suite = useAppDatabases();
const APP = 'budget-knex';

/** pg's `client.end`, as Knex calls it. */
interface RawEnd {
  end: (...args: unknown[]) => unknown;
}

/** Closes that can be held, as a slow socket close would: tarn counts the connection gone meanwhile. */
class HeldCloses {
  #held: Array<() => void> | undefined;
  hold(): void {
    this.#held ??= [];
  }
  release(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const close of held) close();
  }
  /** Wraps a raw connection's `end` (Knex calls it with a callback) so that it waits while closes are held. */
  wrap(connection: RawEnd): void {
    const end = connection.end.bind(connection);
    connection.end = (...args) => {
      const held = this.#held;
      if (held === undefined) return end(...args);
      held.push(() => end(...args));
      return undefined;
    };
  }
}

it('holds at most max + 1 connections across a switch with transactions held and slow closes on the old generation, and waiters on the new; no query fails', async () => {
  const max = 3;
  const cluster = suite.clusters[0]!;
  const closing = new HeldCloses();
  const samples: number[] = [];
  const sessions = async (): Promise<number> => {
    const result = await cluster.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = '${APP}'`,
    );
    return Number(result.rows[0]?.n);
  };
  const db = await createHotloadKnex({
    connection: { application_name: APP },
    pool: {
      min: 0,
      max,
      afterCreate: (connection: RawEnd, done: (error: unknown, c: unknown) => void) => {
        closing.wrap(connection);
        sessions().then(
          (n) => {
            samples.push(n);
            done(null, connection);
          },
          (error) => done(error, connection),
        );
      },
    },
    hotload: { source: { secretDirectory: suite.secret.path }, drainTimeoutMillis: 60_000 },
  });
  try {
    // The old generation full: two transactions held open, one idle connection.
    const transactions = await Promise.all([db.transaction(), db.transaction()]);
    await db.raw('SELECT 1');
    const switched = nextEvent(db.hotload, 'switch');
    const drained = nextEvent(db.hotload, 'drained');
    await suite.rotateOnServer('app_b');
    await suite.publish(cluster, 'app_b');
    await switched;
    samples.push(await sessions());

    // The old connections close slowly: without the budget, Knex's pool (which counts a
    // destroyed connection gone at once) would open new ones beside them.
    closing.hold();
    const answers = Array.from({ length: 2 * max }, async () => {
      const result = await db.raw('SELECT session_user AS u');
      return result.rows[0].u as string;
    });
    for (const trx of transactions) await trx.commit();
    expect(await Promise.all(answers)).toEqual(Array(2 * max).fill('app_b'));
    samples.push(await sessions());
    closing.release();
    await drained;
    expect(Math.max(...samples)).toBeLessThanOrEqual(max + 1);
  } finally {
    closing.release();
    await db.destroy();
  }
});
