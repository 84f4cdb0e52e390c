/**
 * The connection budget across a switch, against real PostgreSQL: all generations of a
 * hotload sql together hold at most `max + 1` connections (the `+ 1` being the verify
 * connection, which the new generation then serves with), however long the old generation
 * keeps its transactions. Connections are counted where the application's own `socket`
 * option opens them (hotload wraps it, so it is also what the budget lets through), and
 * the server's sessions of the pool (pg_stat_activity, by application_name) are sampled at
 * every login. A cancel request, which is no session, never waits for budget.
 */
import net from 'node:net';
import { createHotloadSql, type HotloadSql } from 'hotload-postgres-js';
import { nextEvent, useAppDatabases } from 'hotload-test-support';
import { afterEach, expect, it } from 'vitest';

const suite = useAppDatabases();
const APP = 'budget-postgres-js';

/** What postgres.js hands a `socket` option (the parts used here). */
interface SocketTarget {
  readonly host: readonly string[];
  readonly port: readonly number[];
}

/** An application `socket` option that counts the connections open through it (and their peak). */
class CountedSockets {
  open = 0;
  peak = 0;
  readonly factory = (target: SocketTarget): net.Socket => {
    const socket = net.connect(target.port[0]!, target.host[0]!);
    this.open++;
    this.peak = Math.max(this.peak, this.open);
    socket.once('close', () => this.open--);
    return socket;
  };
}

/** A gate that the test opens: what a transaction's body waits on. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = (): void => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * Resolves once postgres.js has asked for the connections of the queries just made:
 * it asks in a timer it sets once a query is queued (a promise reaction after the
 * query's `then`), so a timer set from a timer that fired after that point fires after it.
 */
async function connectsAsked(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 0));
  await new Promise((resolve) => setTimeout(resolve, 0));
}

let sql: HotloadSql | undefined;
afterEach(async () => {
  await sql?.end();
  sql = undefined;
});

it('holds at most max + 1 connections across a switch with transactions held on the old generation and waiters on the new; no query fails', async () => {
  const max = 3;
  const cluster = suite.clusters[0]!;
  const sockets = new CountedSockets();
  const serverSamples: Array<Promise<number>> = [];
  const sessions = async (): Promise<number> => {
    const result = await cluster.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = '${APP}'`,
    );
    return Number(result.rows[0]?.n);
  };
  sql = await createHotloadSql({
    postgres: {
      max,
      connection: { application_name: APP },
      // Sampled as each connection logs in (its application_name is reported once, at startup).
      onparameter: (key: string) => {
        if (key === 'application_name') serverSamples.push(sessions());
      },
      // postgres.js's `socket` option is not in its types.
      ...({ socket: sockets.factory } as object),
    },
    hotload: { source: { secretDirectory: suite.secret.path }, drainTimeoutMillis: 60_000 },
  });
  const db = sql;

  // The old generation full: two transactions held open, and one more connection.
  const commit = gate();
  const begun = [gate(), gate()];
  const transactions = begun.map((started) =>
    db.begin(async (tx) => {
      await tx`SELECT 1`;
      started.open();
      await commit.opened;
    }),
  );
  await Promise.all(begun.map((started) => started.opened));
  await db`SELECT 1`;
  expect(sockets.open).toBe(max);

  const switched = nextEvent(db.hotload, 'switch');
  const drained = nextEvent(db.hotload, 'drained');
  await suite.rotateOnServer('app_b');
  await suite.publish(cluster, 'app_b');
  await switched;

  const answers = Array.from({ length: 2 * max }, async () => {
    const rows = await db`SELECT session_user AS u`;
    return rows[0]?.u as string;
  });
  await connectsAsked();
  const peakWhileHeld = sockets.peak;
  commit.open();
  await Promise.all(transactions);
  expect(await Promise.all(answers)).toEqual(Array(2 * max).fill('app_b'));
  serverSamples.push(sessions());
  await drained;

  expect(peakWhileHeld).toBeLessThanOrEqual(max + 1);
  expect(sockets.peak).toBeLessThanOrEqual(max + 1);
  expect(Math.max(...(await Promise.all(serverSamples)))).toBeLessThanOrEqual(max + 1);
  // The budget's own count, as the lifecycle reports it.
  expect(db.hotload.connectionCounts.retiring).toBe(0);
  expect(db.hotload.connectionCounts.current).toBe(sockets.open);
});

it('lets a cancel request through while the budget is full', async () => {
  // The statement says it runs (a notice, sent at once) before it sleeps: cancelled from then on.
  const running = gate();
  sql = await createHotloadSql({
    postgres: { max: 1, onnotice: () => running.open() },
    hotload: { source: { secretDirectory: suite.secret.path } },
  });
  const reserved = await sql.reserve();
  try {
    const sleeping = reserved.unsafe("DO $$ BEGIN RAISE NOTICE 'sleeping'; PERFORM pg_sleep(60); END $$");
    const failed = sleeping.then(
      () => undefined,
      (error: unknown) => error,
    );
    await running.opened;
    sleeping.cancel();
    expect(await failed).toMatchObject({ code: '57014' });
  } finally {
    reserved.release();
  }
});

it('runs a query of the old generation that was waiting for budget when the switch retired it on the new generation', async () => {
  const cluster = suite.clusters[0]!;
  let waitingQuery: Promise<unknown> | undefined;
  const db: HotloadSql = await createHotloadSql({
    postgres: { max: 2 },
    hotload: {
      source: { secretDirectory: suite.secret.path },
      drainTimeoutMillis: 60_000,
      // Runs while the new config is verified, before the switch: the old generation
      // still serves, and with its one connection reserved and the verify connection
      // open, the budget (max 2) is full.
      prepare: async () => {
        if (db === undefined) return;
        waitingQuery = db`SELECT session_user AS u`.then((rows) => rows[0]?.u);
        await connectsAsked();
      },
    },
  });
  sql = db;
  const forceClosed: unknown[] = [];
  db.hotload.on('forceClosed', (event) => forceClosed.push(event));
  const reserved = await db.reserve();
  const drained = nextEvent(db.hotload, 'drained');
  try {
    const switched = nextEvent(db.hotload, 'switch');
    await suite.rotateOnServer('app_b');
    await suite.publish(cluster, 'app_b');
    await switched;
    // The reserved connection still holds its budget: the query can only have run on the new generation.
    expect(await waitingQuery).toBe('app_b');
  } finally {
    reserved.release();
  }
  // The old generation drains once its reserved connection is back, not at the deadline
  // (postgres.js's end() would wait for the connection that had waited for budget).
  await drained;
  expect(forceClosed).toEqual([]);
});

/** Work on the new generation that answers with the session's user. */
const NEW_WORK: Array<[string, (db: HotloadSql) => Promise<unknown>]> = [
  ['queries', async (db) => (await db`SELECT session_user AS u`)[0]?.u],
  ['transactions', (db) => db.begin(async (tx) => (await tx`SELECT session_user AS u`)[0]?.u)],
];

it.each(NEW_WORK)(
  "runs the new generation's %s on the connections it has while the old generation's transactions hold the rest of the budget",
  async (_name, answerAsUser) => {
    // Three transactions fill the old generation (max 3); after the switch the budget allows
    // the new generation only its verify connection. Twice max queries on the new generation
    // must all answer on that connection before the transactions end: postgres.js would
    // hand some of them to connections that wait for the old generation's budget. The
    // transactions end when every query has answered, or, if some never do, at the drain
    // deadline (forceClosed): the order of those events is what is checked.
    const max = 3;
    const cluster = suite.clusters[0]!;
    const sockets = new CountedSockets();
    sql = await createHotloadSql({
      postgres: { max, ...({ socket: sockets.factory } as object) },
      hotload: { source: { secretDirectory: suite.secret.path }, drainTimeoutMillis: 20_000 },
    });
    const db = sql;
    const events: string[] = [];
    const commit = gate();
    db.hotload.on('forceClosed', () => {
      events.push('forceClosed');
      commit.open();
    });
    const begun = Array.from({ length: max }, () => gate());
    const transactions = begun.map((started) =>
      db
        .begin(async (tx) => {
          await tx`SELECT 1`;
          started.open();
          await commit.opened;
        })
        .then(
          () => 'committed',
          (error: { code?: string }) => `failed: ${error.code}`,
        ),
    );
    await Promise.all(begun.map((started) => started.opened));
    expect(sockets.open).toBe(max);

    const switched = nextEvent(db.hotload, 'switch');
    await suite.rotateOnServer('app_b');
    await suite.publish(cluster, 'app_b');
    await switched;

    const answers = Array.from({ length: 2 * max }, async () => {
      events.push(`answer as ${String(await answerAsUser(db))}`);
    });
    await Promise.all(answers);
    events.push('all answered');
    commit.open();
    const outcomes = await Promise.all(transactions);
    expect(events).toEqual([...Array(2 * max).fill('answer as app_b'), 'all answered']);
    expect(outcomes).toEqual(Array(max).fill('committed'));
    expect(sockets.peak).toBeLessThanOrEqual(max + 1);
  },
);
