import { createHotloadKnex, type HotloadKnex } from 'hotload-knex';
import {
  type AppUser,
  newPassword,
  type PostgresCluster,
  sessionsOfAfterExit,
  setPassword,
  useAppDatabases,
} from 'hotload-test-support';
import { beforeAll, describe, expect, it } from 'vitest';
import { nextEvent, QueryLoad, recordEvents } from './knex-helpers.js';

const WORKERS = 4;

describe('Knex under load while credentials rotate', () => {
  const { secret, passwords, clusters } = useAppDatabases();
  let cluster: PostgresCluster;
  beforeAll(() => {
    cluster = clusters[0]!;
  });

  it('fails no query across password rotations and login-user switches, and leaves no old session', async () => {
    const db: HotloadKnex = await createHotloadKnex({
      hotload: { source: { secretDirectory: secret.path } },
      pool: { min: 0, max: WORKERS },
    });
    const events = recordEvents(db.hotload);
    const everyPassword: string[] = [passwords.app_a, passwords.app_b];
    const load = new QueryLoad(db, WORKERS);
    try {
      await load.moreSucceeded(50);
      let active: AppUser = 'app_a';
      // Each step: either a rotation of the active user's password (the server first,
      // then the secret), or a switch to the other user with a fresh password (what the
      // claim reconciler does).
      const steps: Array<'rotate' | 'switch'> = ['rotate', 'switch', 'switch', 'rotate', 'switch'];
      for (const step of steps) {
        const previousUser: AppUser = active;
        if (step === 'switch') active = active === 'app_a' ? 'app_b' : 'app_a';
        const password = newPassword();
        everyPassword.push(password);
        await waitForSteadyPool(db);
        await setPassword(cluster, active, password);
        const switched = nextEvent(db.hotload, 'switch');
        await secret.write(cluster, active, password);
        const { toGeneration: generation, fromGeneration: previousGeneration, user } = await switched;
        expect(user).toBe(active);
        await nextEvent(db.hotload, 'drained', (event) => event.generation === previousGeneration);
        await load.moreSucceeded(50);
        expect(db.hotload.generation).toBe(generation);
        if (previousUser !== active) expect(await sessionsOfAfterExit(cluster, previousUser)).toBe(0);
      }
    } finally {
      await load.stop();
      await db.destroy();
    }
    expect(load.failures).toEqual([]);
    expect(load.succeeded).toBeGreaterThan(0);
    for (const event of events) for (const password of everyPassword) expect(event).not.toContain(password);
    expect(await sessionsOfAfterExit(cluster, 'app_a')).toBe(0);
    expect(await sessionsOfAfterExit(cluster, 'app_b')).toBe(0);
  });
});

/**
 * Waits (bounded) until the pool holds its full `WORKERS` connections and opens none. A
 * same-user rotation changes the password on the server before the secret: a connection
 * being opened with the old password in between would fail, as it would for any client.
 * With as many connections as workers and `max` equal to that, the pool opens no more.
 */
async function waitForSteadyPool(db: HotloadKnex): Promise<void> {
  const pool = db.client.pool as { numPendingCreates(): number; numUsed(): number; numFree(): number };
  const steady = () => pool.numPendingCreates() === 0 && pool.numUsed() + pool.numFree() === WORKERS;
  for (let i = 0; i < 1000 && !steady(); i++) await new Promise((r) => setTimeout(r, 5));
}
