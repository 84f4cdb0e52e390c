/**
 * MikroORM 6 on hotload-knex: `driverOptions.client: withHotload(PostgreSqlKnexDialect)`.
 * MikroORM 6 builds its own Knex (its pinned copy) on its own PostgreSQL dialect class;
 * `withHotload` puts that class on the source, so MikroORM keeps its dialect and type
 * parsers while its Knex pool follows the secret and drains the old user's connections.
 */
import { EntitySchema, MikroORM, PostgreSqlKnexDialect } from '@mikro-orm/postgresql';
import { type HotloadKnexClient, type SwitchEvent, withHotload } from 'hotload-knex';
import { APP_DATABASE, nextEvent, sessionsOfAfterExit, useAppDatabases } from 'hotload-test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectUserSwitchUnderLoad } from './user-switch-under-load.js';

class Item {
  id!: number;
  note!: string;
}

const ItemSchema = new EntitySchema<Item>({
  class: Item,
  tableName: 'items',
  properties: { id: { type: 'number', primary: true }, note: { type: 'string' } },
});

const suite = useAppDatabases(1);
let orm: MikroORM;
let client: HotloadKnexClient;
beforeAll(async () => {
  orm = await MikroORM.init({
    entities: [ItemSchema],
    // MikroORM's own use of it (ensureDatabase, schema tools) wants the secret's database;
    // host, port, user and password are not given: the client connects with the source's.
    dbName: APP_DATABASE,
    pool: { min: 0, max: 4 },
    driverOptions: {
      client: withHotload(PostgreSqlKnexDialect),
      hotload: { source: { secretDirectory: suite.secret.path } },
    },
  });
  client = orm.em.getConnection().getKnex().client as HotloadKnexClient;
});
afterAll(async () => {
  if (client && !client.hotload.closed) await orm.close();
});

/** What a MikroORM instance makes of the same work: typed values, SQL, an entity found. */
async function sample(instance: MikroORM): Promise<{ rows: unknown[]; sql: string; found: string[] }> {
  const em = instance.em.fork();
  const rows = await em.execute(
    `SELECT timestamptz '2026-01-02 03:04:05+00' AS at, date '2026-01-02' AS d, interval '1 day' AS i,
            ARRAY[timestamptz '2026-01-02 03:04:05+00'] AS ats`,
  );
  const sql = em
    .createQueryBuilder(Item)
    .select('*')
    .where({ note: 'sample' })
    .orderBy({ id: 'desc' })
    .getFormattedQuery();
  em.create(Item, { note: 'sample' });
  await em.flush();
  const found = (await em.fork().find(Item, { note: 'sample' }, { limit: 1 })).map((item) => item.note);
  return { rows, sql, found };
}

async function step(worker: number, n: number): Promise<void> {
  const note = `mikroorm-${worker}-${n}`;
  const em = orm.em.fork();
  switch (n % 3) {
    case 0:
      em.create(Item, { note });
      await em.flush();
      break;
    case 1:
      await em.find(Item, { note });
      break;
    default:
      await em.transactional(async (trx) => {
        const item = trx.create(Item, { note });
        await trx.flush();
        item.note = `${note}-done`;
        await trx.flush();
        await trx.execute('SELECT session_user');
      });
  }
}

describe('MikroORM 6 (withHotload(PostgreSqlKnexDialect) as driverOptions.client)', () => {
  it('runs on MikroORM’s own dialect class, connected with the source’s settings', async () => {
    expect(client).toBeInstanceOf(PostgreSqlKnexDialect);
    await client.hotload.ready();
    const [row] = await orm.em.fork().execute('SELECT current_database() AS db, session_user AS "user"');
    expect(row).toEqual({ db: APP_DATABASE, user: 'app_a' });
  });

  it('returns what plain MikroORM returns (its SQL and its pg type parsers are kept)', async () => {
    const [cluster] = suite.clusters;
    const plain = await MikroORM.init({
      entities: [ItemSchema],
      dbName: APP_DATABASE,
      host: cluster!.host,
      port: cluster!.port,
      user: 'app_a',
      password: suite.passwords.app_a,
    });
    try {
      expect(await sample(orm)).toEqual(await sample(plain));
      // MikroORM's parsers give text where pg alone would give a Date.
      expect((await sample(orm)).rows[0]).toMatchObject({ at: expect.any(String), d: '2026-01-02' });
    } finally {
      await plain.close();
    }
  });

  it('switches the login user under load with 0 failed queries', async () => {
    await expectUserSwitchUnderLoad(suite, {
      step,
      switched: () => nextEvent<SwitchEvent>(client.hotload, 'switch'),
      drainsOldUser: true,
    });
  });

  it('orm.close() destroys MikroORM’s Knex, which stops watching the source', async () => {
    await orm.close();
    expect(client.hotload.closed).toBe(true);
    expect(await sessionsOfAfterExit(suite.clusters[0]!, 'app_b')).toBe(0);
  });
});
