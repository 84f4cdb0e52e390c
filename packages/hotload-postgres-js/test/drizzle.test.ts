/**
 * Drizzle's postgres.js driver on hotload-postgres-js: `drizzle({ client: sql })` under
 * load while the login user switches, 0 failed queries, and the type handlers Drizzle
 * installs on its client (dates and JSON passed through as text) still apply after the
 * switch, on the new generation's `postgres()` instance.
 */

import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/postgres-js';
import { createHotloadSql } from 'hotload-postgres-js';
import {
  newPassword,
  nextSwitchDrained,
  setPassword,
  useAppDatabases,
  WorkerLoad,
} from 'hotload-test-support';
import { describe, expect, it } from 'vitest';

const notes = pgTable('drizzle_notes', {
  id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
  body: text('body').notNull(),
  at: timestamp('at', { mode: 'string' }).notNull().defaultNow(),
});

describe('Drizzle (postgres.js driver) on hotload-postgres-js', () => {
  const { secret, clusters } = useAppDatabases();

  it('fails no query across a user switch and keeps Drizzle type handling', async () => {
    const sql = await createHotloadSql({
      postgres: { max: 4 },
      hotload: { source: { secretDirectory: secret.path } },
    });
    const db = drizzle({ client: sql });
    await sql`CREATE TABLE IF NOT EXISTS drizzle_notes (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text NOT NULL, at timestamp NOT NULL DEFAULT now())`;
    const load = new WorkerLoad(4, async (worker, n) => {
      await db.insert(notes).values({ body: `w${worker}-${n}` });
      await db.select().from(notes).limit(1);
    });
    try {
      await load.moreSucceeded(20);
      const password = newPassword();
      await setPassword(clusters[0]!, 'app_b', password);
      const drained = nextSwitchDrained<{ user: string; fromGeneration: number }>(sql.hotload);
      await secret.write(clusters[0]!, 'app_b', password);
      const { user } = await drained;
      expect(user).toBe('app_b');
      await load.moreSucceeded(20);
      const [row] = await db.select().from(notes).limit(1);
      // Drizzle's string mode: postgres.js must hand the timestamp through as text, as before the switch.
      expect(typeof row?.at).toBe('string');
      expect((await sql`SELECT session_user AS u`)[0]?.u).toBe('app_b');
    } finally {
      await load.stop();
      await sql.end();
    }
    expect(load.failures).toEqual([]);
  });
});
