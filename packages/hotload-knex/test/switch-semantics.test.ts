import { PassThrough } from 'node:stream';
import { createHotloadKnex, ForceClosedError, HotloadPgClient } from 'hotload-knex';
import {
  type AppUser,
  newPassword,
  type PostgresCluster,
  sessionsOfAfterExit,
  setPassword,
  useAppDatabases,
} from 'hotload-test-support';
import knex from 'knex';
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
      const { previousGeneration } = await switched;
      // A query in flight when the deadline hits gets the drain error.
      const longQuery = trx.raw('SELECT pg_sleep(60)').then();
      const forceClosed = await nextEvent(db.hotload, 'forceClosed');
      expect(forceClosed).toEqual({ generation: previousGeneration, connections: 1 });
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
        retryInitialDelayMillis: 20,
        retryMaxDelayMillis: 100,
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
      expect((await switched).generation).toBe(generation + 1);
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
    } as never);
    const client = db.client as HotloadPgClient;
    await client.hotload.ready;
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
});
