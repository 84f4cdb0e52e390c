/** Drizzle (node-postgres) on hotload-pg: `drizzle(pool)`, a user switch under load. */
import { eq, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import { Pool } from 'hotload-pg';
import { useAppDatabases } from 'hotload-test-support';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { expectUserSwitchUnderLoad, nextSwitch } from './user-switch-under-load.js';

const items = pgTable('items', { id: serial('id').primaryKey(), note: text('note').notNull() });

const suite = useAppDatabases(1);
let pool: Pool;
let db: ReturnType<typeof drizzle>;
beforeAll(() => {
  pool = new Pool({ max: 4, hotload: { source: { secretDirectory: suite.secret.path } } });
  db = drizzle(pool);
});
afterAll(async () => {
  await pool?.end();
});

async function step(worker: number, n: number): Promise<void> {
  const note = `drizzle-${worker}-${n}`;
  switch (n % 3) {
    case 0:
      await db.insert(items).values({ note });
      break;
    case 1:
      await db.select().from(items).where(eq(items.note, note));
      break;
    default:
      await db.transaction(async (tx) => {
        const [row] = await tx.insert(items).values({ note }).returning({ id: items.id });
        await tx
          .update(items)
          .set({ note: `${note}-done` })
          .where(eq(items.id, row!.id));
        await tx.execute(sql`SELECT session_user`);
      });
  }
}

describe('Drizzle node-postgres (drizzle(pool) with the hotload-pg Pool)', () => {
  it('switches the login user under load with 0 failed queries', async () => {
    await expectUserSwitchUnderLoad(suite, { step, switched: () => nextSwitch(pool), drainsOldUser: true });
  });
});
