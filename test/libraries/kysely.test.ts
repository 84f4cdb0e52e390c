/** Kysely on hotload-pg: `new PostgresDialect({ pool })`, a user switch under load. */
import { Pool } from 'hotload-pg';
import { useAppDatabases } from 'hotload-test-support';
import { type Generated, Kysely, PostgresDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { expectUserSwitchUnderLoad, nextSwitch } from './user-switch-under-load.js';

interface Database {
  items: { id: Generated<number>; note: string };
}

const suite = useAppDatabases(1);
let pool: Pool;
let db: Kysely<Database>;
beforeAll(() => {
  pool = new Pool({ max: 4, hotload: { source: { secretDirectory: suite.secret.path } } });
  db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
});
afterAll(async () => {
  await db?.destroy(); // ends the pool
});

async function step(worker: number, n: number): Promise<void> {
  const note = `kysely-${worker}-${n}`;
  switch (n % 3) {
    case 0:
      await db.insertInto('items').values({ note }).execute();
      break;
    case 1:
      await db.selectFrom('items').select(['id', 'note']).where('note', '=', note).execute();
      break;
    default:
      await db.transaction().execute(async (trx) => {
        const { id } = await trx
          .insertInto('items')
          .values({ note })
          .returning('id')
          .executeTakeFirstOrThrow();
        await trx
          .updateTable('items')
          .set({ note: `${note}-done` })
          .where('id', '=', id)
          .execute();
        await sql`SELECT session_user`.execute(trx);
      });
  }
}

describe('Kysely (PostgresDialect with the hotload-pg Pool)', () => {
  it('switches the login user under load with 0 failed queries', async () => {
    await expectUserSwitchUnderLoad(suite, { step, switched: () => nextSwitch(pool), drainsOldUser: true });
  });
});
