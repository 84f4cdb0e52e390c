/**
 * `knex.destroy()` while a new config is being verified: the verify connection is closed
 * at once, not left open until `verifyTimeoutMillis`.
 */
import { writeSecretAtomically } from 'hotload-core';
import { createHotloadKnex } from 'hotload-knex';
import { APP_DATABASE, FaultProxy, type PostgresCluster, useAppDatabases } from 'hotload-test-support';
import { beforeAll, describe, expect, it } from 'vitest';
import { nextEvent } from './knex-helpers.js';

/** Polls (bounded) a state that has no event: the proxy's count of open connections. */
async function eventuallyTrue(condition: () => boolean, tries = 300): Promise<boolean> {
  for (let i = 0; i < tries && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return condition();
}

describe('destroy() during a verify', () => {
  const { secret, passwords, clusters } = useAppDatabases();
  let cluster: PostgresCluster;
  beforeAll(() => {
    cluster = clusters[0]!;
  });

  it('closes the verify connection of a pending switch at once', async () => {
    const proxy = await FaultProxy.start({ host: cluster.host, port: cluster.port });
    try {
      // The verify timeout is far off: only destroy() can end the stalled verify.
      const db = await createHotloadKnex({
        hotload: { source: { secretDirectory: secret.path }, verifyTimeoutMillis: 600_000 },
      });
      await db.raw('SELECT 1');
      proxy.stall();
      await writeSecretAtomically(secret.path, {
        hostname: proxy.host,
        port: String(proxy.port),
        username: 'app_a',
        password: passwords.app_a,
        database: APP_DATABASE,
      });
      // The new config's verify connection is open and stalled.
      expect(await eventuallyTrue(() => proxy.connectionCount > 0)).toBe(true);
      const noSwitch = Promise.race([nextEvent(db.hotload, 'switch').then(() => 'switched'), db.destroy()]);
      expect(await noSwitch).not.toBe('switched');
      expect(await eventuallyTrue(() => proxy.connectionCount === 0)).toBe(true);
    } finally {
      await proxy.close();
    }
  });
});
