import { join } from 'node:path';
import { SourceError } from 'hotload-core';
import { Pool, type VerifyFailedEvent } from 'hotload-pg';
import { nextEvent } from 'hotload-test-support';
import { describe, expect, it } from 'vitest';
import { settledSessions } from './helpers.js';
import { useSecretDirectory } from './secret-directory-fixture.js';

const fixture = useSecretDirectory('svc', 'svc_pw_0');

function recordEvents(pool: Pool): unknown[] {
  const events: unknown[] = [];
  for (const name of ['switch', 'verifyFailed', 'drained', 'forceClosed', 'sourceError'] as const) {
    pool.on(name, (event: unknown) => events.push(event));
  }
  return events;
}

describe('secret directory source', () => {
  it('serves queries issued before the secret was read, then follows rotations under load', async () => {
    await fixture.cluster.query("ALTER ROLE svc PASSWORD 'svc_pw_0'");
    await fixture.writer.write(fixture.secret('svc_pw_0'));
    const pool = new Pool({
      max: 4,
      hotload: { source: { secretDirectory: fixture.dir }, verifyRetryInitialMillis: 20 },
    });
    const events = recordEvents(pool);
    const early = pool.query('SELECT current_user AS u'); // before the source was read
    expect((await early).rows).toEqual([{ u: 'svc' }]);

    let running = true;
    const failures: Error[] = [];
    let ok = 0;
    const loops = Array.from({ length: 8 }, async () => {
      while (running) {
        await pool.query('SELECT 1').then(
          () => ok++,
          (error: Error) => failures.push(error),
        );
      }
    });
    const passwords = ['svc_pw_0'];
    for (let round = 1; round <= 5; round++) {
      const password = `svc_pw_${round}`;
      passwords.push(password);
      const drained = nextEvent(pool, 'drained');
      await fixture.cluster.query(`ALTER ROLE svc PASSWORD '${password}'`); // the database first
      await fixture.writer.write(fixture.secret(password)); // then the secret, atomically
      await drained;
    }
    running = false;
    await Promise.all(loops);
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(0);
    expect(pool.otherGenerations).toEqual([]);
    expect(pool.generation).toBe(6);
    const text = JSON.stringify(events);
    for (const password of passwords) expect(text).not.toContain(password);
    await pool.end();
    const svc = (all: Array<{ usename: string }>) => all.filter((s) => s.usename === 'svc');
    expect(svc(await settledSessions(fixture.cluster, (all) => svc(all).length === 0))).toEqual([]);
  });

  it('keeps serving when the secret is ahead of the database, and switches once the database catches up', async () => {
    await fixture.cluster.query("ALTER ROLE svc PASSWORD 'ahead_0'");
    await fixture.writer.write(fixture.secret('ahead_0'));
    const pool = await Pool.create({
      hotload: { source: { secretDirectory: fixture.dir }, verifyRetryInitialMillis: 20 },
    });
    const events = recordEvents(pool);
    const failed = nextEvent<VerifyFailedEvent>(pool, 'verifyFailed');
    const switched = nextEvent(pool, 'switch');
    await fixture.writer.write(fixture.secret('ahead_1'));
    expect((await failed).error.message).toMatch(/password authentication failed/);
    expect((await pool.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]); // old generation
    expect(pool.generation).toBe(1);
    await fixture.cluster.query("ALTER ROLE svc PASSWORD 'ahead_1'");
    await switched;
    expect(pool.generation).toBeGreaterThan(1);
    expect((await pool.query('SELECT current_user AS u')).rows).toEqual([{ u: 'svc' }]);
    const text = JSON.stringify(events) + events.map((e) => String((e as { error?: Error }).error?.message));
    expect(text).not.toContain('ahead_0');
    expect(text).not.toContain('ahead_1');
    await pool.end();
  });

  it('reports an invalid change and keeps serving on the last good config', async () => {
    await fixture.cluster.query("ALTER ROLE svc PASSWORD 'bad_0'");
    await fixture.writer.write(fixture.secret('bad_0'));
    const pool = await Pool.create({ hotload: { source: { secretDirectory: fixture.dir } } });
    const reported = nextEvent<{ error: Error }>(pool, 'sourceError');
    await fixture.writer.write(fixture.secret('bad_0', { port: 'not-a-port' }));
    expect((await reported).error).toBeInstanceOf(SourceError);
    expect((await pool.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    expect(pool.generation).toBe(1);
    await pool.end();
  });

  it('rejects checkouts with the SourceError when the initial source is invalid', async () => {
    const pool = new Pool({ hotload: { source: { secretDirectory: join(fixture.dir, 'does-not-exist') } } });
    pool.on('sourceError', () => {});
    const early = pool.query('SELECT 1');
    await expect(pool.ready()).rejects.toBeInstanceOf(SourceError);
    await expect(early).rejects.toBeInstanceOf(SourceError);
    await expect(pool.connect()).rejects.toBeInstanceOf(SourceError);
    await pool.end();
    expect(pool.ended).toBe(true);
  });
});
