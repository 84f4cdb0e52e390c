/**
 * One handshake per switch: the connection that verified a new config is the first one
 * Knex's pool gets after the switch (Knex's `afterCreate` and `searchPath` applied to it,
 * as to any connection Knex opens), and a verified connection never taken is closed
 * (idle timeout, destroy).
 */
import { createHotloadKnex, type HotloadKnex, type PgProbeClient } from 'hotload-knex';
import {
  type AppUser,
  newPassword,
  type PostgresCluster,
  sessionsOfAfterExit,
  setPassword,
  useAppDatabases,
} from 'hotload-test-support';
import type { Knex } from 'knex';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { nextEvent } from './knex-helpers.js';

describe('Knex: the verified connection serves first after a switch', () => {
  const { secret, passwords, clusters } = useAppDatabases();
  let cluster: PostgresCluster;
  let active: AppUser = 'app_a';

  async function switchUser(db: HotloadKnex): Promise<AppUser> {
    active = active === 'app_a' ? 'app_b' : 'app_a';
    passwords[active] = newPassword();
    await setPassword(cluster, active, passwords[active]);
    const switched = nextEvent(db.hotload, 'switch');
    await secret.write(cluster, active, passwords[active]);
    await switched;
    return active;
  }

  /** A single-connection Knex client that records the backend of every verify connection. */
  async function create(pool: Knex.PoolConfig = {}): Promise<{ db: HotloadKnex; verifiedPids: number[] }> {
    const verifiedPids: number[] = [];
    const prepare = async (client: PgProbeClient): Promise<void> => {
      const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
      verifiedPids.push(Number(rows[0]?.pid));
    };
    const db = await createHotloadKnex({
      hotload: { source: { secretDirectory: secret.path }, prepare },
      pool: { min: 0, max: 1, ...pool },
    });
    return { db, verifiedPids };
  }

  beforeAll(() => {
    cluster = clusters[0]!;
  });

  beforeEach(async () => {
    await secret.write(cluster, active, passwords[active]);
  });

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
      for (let sample = 0; sample < 3; sample++) {
        const user = await switchUser(db);
        const { rows } = await db.raw(
          "SELECT pg_backend_pid() AS pid, session_user AS u, current_setting('application_name') AS app",
        );
        expect(rows[0]).toEqual({ pid: verifiedPids[sample], u: user, app: 'after-create' });
      }
      // One connection at the start, then exactly the verified one per switch.
      expect(afterCreated).toHaveLength(4);
    } finally {
      await db.destroy();
    }
  });

  it('sets searchPath on the verified connection as Knex does on its own', async () => {
    const verifiedPids: number[] = [];
    const db = await createHotloadKnex({
      hotload: {
        source: { secretDirectory: secret.path },
        prepare: async (client) => {
          verifiedPids.push(Number((await client.query('SELECT pg_backend_pid() AS pid')).rows[0]?.pid));
        },
      },
      searchPath: ['spare_schema', 'public'],
      pool: { min: 0, max: 1 },
    });
    try {
      await db.raw('SELECT 1');
      await switchUser(db);
      const { rows } = await db.raw("SELECT pg_backend_pid() AS pid, current_setting('search_path') AS path");
      expect(rows[0]).toEqual({ pid: verifiedPids[0], path: 'spare_schema, public' });
    } finally {
      await db.destroy();
    }
  });

  it('closes a verified connection never taken once the pool idle timeout passes', async () => {
    const { db } = await create({ idleTimeoutMillis: 200 });
    try {
      await db.raw('SELECT 1');
      const user = await switchUser(db);
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
      user = await switchUser(db);
    } finally {
      await db.destroy();
    }
    expect(await sessionsOfAfterExit(cluster, user)).toBe(0);
  });
});
