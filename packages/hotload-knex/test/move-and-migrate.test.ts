import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHotloadKnex } from 'hotload-knex';
import {
  newPassword,
  nextSwitchDrained,
  type PostgresCluster,
  sessionsOf,
  sessionsOfAfterExit,
  setPassword,
  useAppDatabases,
} from 'hotload-test-support';
import type { Knex } from 'knex';
import { beforeAll, describe, expect, it } from 'vitest';
import { nextEvent, QueryLoad } from './knex-helpers.js';

describe('Knex moving to a second server, and migrating and seeding during a rotation', () => {
  const { secret, passwords, clusters } = useAppDatabases(2);
  let first: PostgresCluster;
  let second: PostgresCluster;

  beforeAll(() => {
    [first, second] = clusters as [PostgresCluster, PostgresCluster];
  });

  it('moves under load to a second server without a failed query, leaving no session on the first', async () => {
    await secret.write(first, 'app_a', passwords.app_a);
    const db = await createHotloadKnex({
      hotload: { source: { secretDirectory: secret.path } },
      pool: { min: 0, max: 8 },
    });
    const load = new QueryLoad(db, 4);
    try {
      await load.moreSucceeded(50);
      const drained = nextSwitchDrained<{ port: number; fromGeneration?: number }>(db.hotload);
      await secret.write(second, 'app_a', passwords.app_a);
      const { port } = await drained;
      expect(port).toBe(second.port);
      await load.moreSucceeded(50);
      expect(await sessionsOfAfterExit(first, 'app_a')).toBe(0);
      expect(await sessionsOf(second, 'app_a')).toBeGreaterThan(0);
    } finally {
      await load.stop();
      await db.destroy();
    }
    expect(load.failures).toEqual([]);
    // Work after the move landed on the second server.
    const { rows } = await second.query<{ n: string }>('SELECT count(*) AS n FROM items', [], 'appdb');
    expect(Number(rows[0]?.n)).toBeGreaterThan(0);
  });

  it('runs migrations while the login user switches in the middle of them', async () => {
    await secret.write(second, 'app_a', passwords.app_a);
    const db = await createHotloadKnex({ hotload: { source: { secretDirectory: secret.path } } });
    const rotated: { user?: string } = {};
    // The second migration rotates the credentials and waits for the switch inside its
    // own transaction, so the rotation is guaranteed to happen mid-migration.
    const rotateMidMigration = async () => {
      passwords.app_b = newPassword();
      await setPassword(second, 'app_b', passwords.app_b);
      const switched = nextEvent(db.hotload, 'switch');
      await secret.write(second, 'app_b', passwords.app_b);
      rotated.user = (await switched).user;
    };
    const migrations: Record<string, Knex.Migration> = {
      '001_create_orders': {
        up: (knex) => knex.schema.createTable('orders', (t) => t.increments('id').primary()),
        down: (knex) => knex.schema.dropTable('orders'),
      },
      '002_add_total': {
        up: async (knex) => {
          await knex.schema.alterTable('orders', (t) => t.integer('total'));
          await rotateMidMigration();
          await knex('orders').insert({ total: 42 });
        },
        down: (knex) => knex.schema.alterTable('orders', (t) => t.dropColumn('total')),
      },
      '003_create_customers': {
        up: (knex) => knex.schema.createTable('customers', (t) => t.increments('id').primary()),
        down: (knex) => knex.schema.dropTable('customers'),
      },
    };
    const migrationSource: Knex.MigrationSource<string> = {
      getMigrations: async () => Object.keys(migrations),
      getMigrationName: (name) => name,
      getMigration: async (name) => migrations[name] as Knex.Migration,
    };
    try {
      const [, applied] = (await db.migrate.latest({ migrationSource })) as [number, string[]];
      expect(applied).toEqual(Object.keys(migrations));
      expect(rotated.user).toBe('app_b');
      expect((await db.raw('SELECT session_user AS u')).rows[0].u).toBe('app_b');
      expect(await db('orders').pluck('total')).toEqual([42]);
      expect(await db.schema.hasTable('customers')).toBe(true);
      expect(await db.migrate.currentVersion({ migrationSource })).toBe('003');
      const [, rolledBack] = (await db.migrate.rollback({ migrationSource }, true)) as [number, string[]];
      expect(rolledBack.sort()).toEqual(Object.keys(migrations));
      expect(await sessionsOfAfterExit(second, 'app_a')).toBe(0);
    } finally {
      await db.destroy();
    }
  });

  it('runs seeds while the login user switches in the middle of one', async () => {
    // Knex loads seed files itself (import() for .mjs); the seed calls back into the test
    // through a global to rotate mid-seed.
    const seedDirectory = mkdtempSync(join(tmpdir(), 'hotload-knex-seeds-'));
    writeFileSync(
      join(seedDirectory, '01_items.mjs'),
      `export async function seed(knex) {
        await knex('items').insert({ note: 'seed-before-switch' });
        await globalThis.hotloadKnexMidSeed();
        await knex('items').insert({ note: 'seed-after-switch' });
      }\n`,
    );
    await secret.write(second, 'app_b', passwords.app_b);
    const db = await createHotloadKnex({ hotload: { source: { secretDirectory: secret.path } } });
    const hooks = globalThis as { hotloadKnexMidSeed?: () => Promise<void> };
    hooks.hotloadKnexMidSeed = async () => {
      passwords.app_a = newPassword();
      await setPassword(second, 'app_a', passwords.app_a);
      const switched = nextEvent(db.hotload, 'switch');
      await secret.write(second, 'app_a', passwords.app_a);
      await switched;
    };
    try {
      const [files] = await db.seed.run({ directory: seedDirectory, loadExtensions: ['.mjs'] });
      expect(files).toHaveLength(1);
      expect((await db.raw('SELECT session_user AS u')).rows[0].u).toBe('app_a');
      const notes = await db('items')
        .whereIn('note', ['seed-before-switch', 'seed-after-switch'])
        .pluck('note');
      expect(notes.sort()).toEqual(['seed-after-switch', 'seed-before-switch']);
    } finally {
      delete hooks.hotloadKnexMidSeed;
      await db.destroy();
      rmSync(seedDirectory, { recursive: true, force: true });
    }
  });
});
