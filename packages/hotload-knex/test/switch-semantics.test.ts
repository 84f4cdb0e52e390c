import { PassThrough } from 'node:stream';
import {
  createHotloadKnex,
  ForceClosedError,
  type HotloadKnex,
  HotloadPgClient,
  type PgProbeClient,
} from 'hotload-knex';
import {
  type AppUser,
  newPassword,
  type PostgresCluster,
  sessionsOfAfterExit,
  setPassword,
  useAppDatabases,
} from 'hotload-test-support';
import knex, { type Knex } from 'knex';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { nextEvent } from './knex-helpers.js';

describe('Knex features across a switch', () => {
  const { secret, passwords, clusters } = useAppDatabases();
  let cluster: PostgresCluster;
  let active: AppUser = 'app_a';

  /** Switches the secret to the other login user with a fresh password. */
  async function switchUser(): Promise<AppUser> {
    active = active === 'app_a' ? 'app_b' : 'app_a';
    passwords[active] = newPassword();
    await setPassword(cluster, active, passwords[active]);
    await secret.write(cluster, active, passwords[active]);
    return active;
  }

  beforeAll(() => {
    cluster = clusters[0]!;
  });

  beforeEach(async () => {
    await secret.write(cluster, active, passwords[active]);
  });

  it('commits a transaction that was open across a switch, then drains its connection', async () => {
    const db = await createHotloadKnex({ hotload: { source: { secretDirectory: secret.path } } });
    try {
      const before = active;
      let drainedBeforeCommit = false;
      const trx = await db.transaction();
      await trx('items').insert({ note: 'trx-before-switch' });
      const switched = nextEvent(db.hotload, 'switch');
      const drained = nextEvent(db.hotload, 'drained').then(() => {
        drainedBeforeCommit = !trx.isCompleted();
      });
      const after = await switchUser();
      await switched;
      // New work already runs as the new user while the transaction stays on the old one.
      expect((await db.raw('SELECT session_user AS u')).rows[0].u).toBe(after);
      expect((await trx.raw('SELECT session_user AS u')).rows[0].u).toBe(before);
      await trx('items').insert({ note: 'trx-after-switch' });
      await trx.commit();
      await drained;
      expect(drainedBeforeCommit).toBe(false);
      const notes = await db('items')
        .whereIn('note', ['trx-before-switch', 'trx-after-switch'])
        .pluck('note');
      expect(notes.sort()).toEqual(['trx-after-switch', 'trx-before-switch']);
      expect(await sessionsOfAfterExit(cluster, before)).toBe(0);
    } finally {
      await db.destroy();
    }
  });

  it('force-closes a connection still in use at the drain timeout, with a clear error', async () => {
    const db = await createHotloadKnex({
      hotload: { source: { secretDirectory: secret.path }, drainTimeoutMillis: 200 },
    });
    try {
      const before = active;
      const trx = await db.transaction();
      const switched = nextEvent(db.hotload, 'switch');
      await switchUser();
      const { fromGeneration: previousGeneration } = await switched;
      // A query in flight when the deadline hits gets the drain error.
      const longQuery = trx.raw('SELECT pg_sleep(60)').then();
      const forceClosed = await nextEvent(db.hotload, 'forceClosed');
      expect(forceClosed).toEqual({
        generation: previousGeneration,
        connections: 1,
        drainTimeoutMillis: 200,
      });
      await expect(longQuery).rejects.toBeInstanceOf(ForceClosedError);
      // So does anything the holder tries afterwards.
      await expect(trx.raw('SELECT 1')).rejects.toBeInstanceOf(ForceClosedError);
      await trx.rollback().catch(() => {});
      await nextEvent(db.hotload, 'drained', (event) => event.generation === previousGeneration);
      expect(await sessionsOfAfterExit(cluster, before)).toBe(0);
      expect((await db.raw('SELECT 1 AS one')).rows[0].one).toBe(1);
    } finally {
      await db.destroy();
    }
  });

  it('keeps serving on the current config while a new one fails verification, then switches', async () => {
    const db = await createHotloadKnex({
      hotload: {
        source: { secretDirectory: secret.path },
        verifyRetryInitialMillis: 20,
        verifyRetryMaxMillis: 100,
      },
    });
    try {
      const generation = db.hotload.generation;
      const next: AppUser = active === 'app_a' ? 'app_b' : 'app_a';
      const password = newPassword();
      // The secret is updated before the server knows the password: verification fails.
      const failed = nextEvent(db.hotload, 'verifyFailed');
      await secret.write(cluster, next, password);
      const failure = await failed;
      expect(failure.user).toBe(next);
      expect(failure.error.message).not.toContain(password);
      expect(db.hotload.generation).toBe(generation);
      expect((await db.raw('SELECT session_user AS u')).rows[0].u).toBe(active);
      // Once the server accepts it, a retry succeeds.
      const switched = nextEvent(db.hotload, 'switch');
      passwords[next] = password;
      await setPassword(cluster, next, password);
      expect((await switched).toGeneration).toBeGreaterThan(generation ?? 0);
      active = next;
      expect((await db.raw('SELECT session_user AS u')).rows[0].u).toBe(next);
    } finally {
      await db.destroy();
    }
  });

  it('finishes a stream that was running across a switch', async () => {
    const db = await createHotloadKnex({ hotload: { source: { secretDirectory: secret.path } } });
    try {
      const rows: unknown[] = [];
      const sink = new PassThrough({ objectMode: true });
      const stream = db.raw('SELECT n FROM generate_series(1, 20000) AS n').stream({ highWaterMark: 10 });
      const firstRow = new Promise<void>((resolve) => stream.once('data', () => resolve()));
      stream.pipe(sink);
      sink.pause();
      await firstRow;
      const switched = nextEvent(db.hotload, 'switch');
      await switchUser();
      await switched;
      sink.on('data', (row) => rows.push(row));
      await new Promise((resolve, reject) => {
        sink.on('end', resolve);
        stream.on('error', reject);
        sink.resume();
      });
      // every row, once, in order: none lost or repeated across the switch
      const expected = Array.from({ length: 20000 }, (_, i) => i + 1);
      expect(rows.map((row) => (row as { n: number }).n)).toEqual(expected);
    } finally {
      await db.destroy();
    }
  });

  it('works as Knex `client` option, and destroy() closes every generation', async () => {
    const db = knex({
      client: HotloadPgClient,
      hotload: { source: { secretDirectory: secret.path } },
    });
    const client = db.client as HotloadPgClient;
    await client.hotload.ready();
    const before = active;
    const trx = await db.transaction();
    await trx.raw('SELECT 1');
    const switched = nextEvent(client.hotload, 'switch');
    const after = await switchUser();
    await switched;
    await db.raw('SELECT 1');
    // Both generations have a session now: destroy() must close them all once released.
    const destroyed = db.destroy();
    await trx.commit();
    await destroyed;
    expect(await sessionsOfAfterExit(cluster, before)).toBe(0);
    expect(await sessionsOfAfterExit(cluster, after)).toBe(0);
  });

  it('rejects a broken source in createHotloadKnex with the source error', async () => {
    await expect(
      createHotloadKnex({ hotload: { source: { secretDirectory: `${secret.path}-missing` } } }),
    ).rejects.toThrow();
  });

  describe('one handshake per switch: the verified connection serves first', () => {
    /** Switches the user and waits until `db` serves the new one. */
    async function switchAndWait(db: HotloadKnex): Promise<AppUser> {
      const switched = nextEvent(db.hotload, 'switch');
      const user = await switchUser();
      await switched;
      return user;
    }

    /** A single-connection Knex client that records the backend of every verify connection. */
    async function create(
      pool: Knex.PoolConfig = {},
      knexOptions: Pick<Knex.Config, 'searchPath'> = {},
    ): Promise<{ db: HotloadKnex; verifiedPids: number[] }> {
      const verifiedPids: number[] = [];
      const prepare = async (client: PgProbeClient): Promise<void> => {
        const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
        verifiedPids.push(Number(rows[0]?.pid));
      };
      const db = await createHotloadKnex({
        hotload: { source: { secretDirectory: secret.path }, prepare },
        pool: { min: 0, max: 1, ...pool },
        ...knexOptions,
      });
      return { db, verifiedPids };
    }

    it('runs the first query after each switch on the connection that verified it, Knex hooks applied', async () => {
      const afterCreated: number[] = [];
      const afterCreate = (connection: PgProbeClient, done: (error: Error | null) => void): void => {
        connection.query("SET application_name = 'after-create'").then(
          () => {
            afterCreated.push(1);
            done(null);
          },
          (error: Error) => done(error),
        );
      };
      const { db, verifiedPids } = await create({ afterCreate });
      try {
        await db.raw('SELECT 1');
        for (const _ of [1, 2, 3]) {
          const user = await switchAndWait(db);
          const { rows } = await db.raw(
            "SELECT pg_backend_pid() AS pid, session_user AS u, current_setting('application_name') AS app",
          );
          expect(rows[0]).toEqual({ pid: verifiedPids.at(-1), u: user, app: 'after-create' });
        }
        // One connection at the start, then exactly the verified one per switch.
        expect(afterCreated).toHaveLength(4);
      } finally {
        await db.destroy();
      }
    });

    it('sets searchPath on the verified connection as Knex does on its own', async () => {
      const { db, verifiedPids } = await create({}, { searchPath: ['spare_schema', 'public'] });
      try {
        await db.raw('SELECT 1');
        await switchAndWait(db);
        const { rows } = await db.raw(
          "SELECT pg_backend_pid() AS pid, current_setting('search_path') AS path",
        );
        expect(rows[0]).toEqual({ pid: verifiedPids.at(-1), path: 'spare_schema, public' });
      } finally {
        await db.destroy();
      }
    });

    it('closes a verified connection never taken once the pool idle timeout passes', async () => {
      const { db } = await create({ idleTimeoutMillis: 200 });
      try {
        await db.raw('SELECT 1');
        const user = await switchAndWait(db);
        // No query after the switch: only the verified connection is open as the new user.
        expect(await sessionsOfAfterExit(cluster, user)).toBe(0);
        expect((await db.raw('SELECT session_user AS u')).rows[0].u).toBe(user);
      } finally {
        await db.destroy();
      }
    });

    it('closes a verified connection never taken on destroy()', async () => {
      const { db } = await create();
      let user: AppUser;
      try {
        await db.raw('SELECT 1');
        user = await switchAndWait(db);
      } finally {
        await db.destroy();
      }
      expect(await sessionsOfAfterExit(cluster, user)).toBe(0);
    });
  });
});
