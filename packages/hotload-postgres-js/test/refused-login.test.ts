/**
 * A login refused for its credentials (the password changed in the database a moment
 * before the secret) through every way postgres.js runs work: the very same query object
 * is sent to the new secret's generation with the modifiers the holder applied, and
 * `sql.begin` / `sql.reserve` are called again there. Each case starts with no connection
 * open, so its first work logs in with the old password; the secret is published when the
 * driver re-reads the source after the refusal.
 */
import { createHotloadSql, type HotloadSql } from 'hotload-postgres-js';
import { newPassword, RereadHookSource, setPassword, useAppDatabases } from 'hotload-test-support';
import { afterEach, describe, expect, it } from 'vitest';

describe('postgres.js: work refused at login runs once the new secret serves', () => {
  const { secret, passwords, clusters } = useAppDatabases();
  let sql: HotloadSql | undefined;
  afterEach(async () => {
    await sql?.end();
    sql = undefined;
  });

  /** A fresh `sql` (no connection yet) whose password is then changed on the server only. */
  async function refusedAtLogin(): Promise<{ sql: HotloadSql; published: () => boolean }> {
    await secret.write(clusters[0]!, 'app_a', passwords.app_a);
    const source = new RereadHookSource({ secretDirectory: secret.path });
    sql = await createHotloadSql({ postgres: { max: 2 }, hotload: { source } });
    const password = newPassword();
    await setPassword(clusters[0]!, 'app_a', password);
    passwords.app_a = password;
    let published = false;
    source.beforeNextRead(async () => {
      await secret.write(clusters[0]!, 'app_a', password);
      published = true;
    });
    return { sql, published: () => published };
  }

  it('keeps a query modifier (.values()) on the query it sends again', async () => {
    const { sql, published } = await refusedAtLogin();
    expect(await sql`SELECT session_user AS u, 1 AS n`.values()).toEqual([['app_a', 1]]);
    expect(published()).toBe(true);
  });

  it('runs a transaction whose begin was refused at login', async () => {
    const { sql, published } = await refusedAtLogin();
    const user = await sql.begin(async (tx) => (await tx`SELECT session_user AS u`)[0]?.u);
    expect(user).toBe('app_a');
    expect(published()).toBe(true);
  });

  it('reserves a connection once the new secret serves', async () => {
    const { sql, published } = await refusedAtLogin();
    const reserved = await sql.reserve();
    try {
      expect((await reserved`SELECT session_user AS u`)[0]?.u).toBe('app_a');
    } finally {
      reserved.release();
    }
    expect(published()).toBe(true);
  });
});
