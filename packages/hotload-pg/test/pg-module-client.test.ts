/**
 * createPgModule({ source }).Client: the pg.Client of libraries that pool clients
 * themselves (Sequelize) follows the source, and reports clients of an older generation
 * invalid so their pool retires them. (Sequelize itself: test/libraries/sequelize.test.ts.)
 */
import { createPgModule, type SourceFollowingClientClass } from 'hotload-pg';
import { useAppDatabases } from 'hotload-test-support';
import type pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';

const suite = useAppDatabases(1);
const pgModule = createPgModule({ source: { secretDirectory: suite.secret.path } });
const Client = pgModule.Client as SourceFollowingClientClass;
afterAll(async () => {
  await Client.endSource();
});

type Flagged = pg.Client & { _invalid: boolean };

async function sessionUser(client: pg.Client): Promise<string> {
  const { rows } = await client.query<{ user: string }>('SELECT session_user AS "user"');
  return rows[0]!.user;
}

/** The follower has no public event: poll the flag it drives (bounded). */
async function untilInvalid(client: Flagged): Promise<boolean> {
  for (let i = 0; i < 400 && !client._invalid; i++) await new Promise((resolve) => setTimeout(resolve, 25));
  return client._invalid;
}

describe('createPgModule({ source }).Client', () => {
  it('connects with the source settings (built before the first read too), whatever the library passed', async () => {
    const early = new Client({ host: 'not-used.invalid', user: 'nobody', database: 'nothing' }) as Flagged;
    await early.connect();
    expect(await sessionUser(early)).toBe('app_a');
    const later = new Client('postgres://nobody@not-used.invalid/nothing') as Flagged;
    await new Promise<void>((resolve, reject) =>
      later.connect((err: Error | null) => (err ? reject(err) : resolve())),
    );
    expect(await sessionUser(later)).toBe('app_a');
    expect([early._invalid, later._invalid]).toEqual([false, false]);
    await Promise.all([early.end(), later.end()]);
  });

  it('after a switch: old clients report _invalid (and keep working), new ones connect as the new user', async () => {
    const old = new Client() as Flagged;
    await old.connect();
    await suite.secret.write(suite.clusters[0]!, 'app_b', suite.passwords.app_b);
    expect(await untilInvalid(old)).toBe(true);
    expect(await sessionUser(old)).toBe('app_a');
    const fresh = new Client() as Flagged;
    await fresh.connect();
    expect(await sessionUser(fresh)).toBe('app_b');
    expect(fresh._invalid).toBe(false);
    fresh._invalid = true; // what Sequelize does on a connection error
    expect(fresh._invalid).toBe(true);
    await Promise.all([old.end(), fresh.end()]);
  });
});
