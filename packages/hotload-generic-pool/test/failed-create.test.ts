import { ConnectionConfig } from 'hotload-core';
import type { ClientFactory } from 'hotload-generic-pool';
import { useAppDatabases } from 'hotload-test-support';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { pgClientFactory } from '../../../test/contract/pg-client-factory.js';
import { hotloadGenericPool, type PoolSubject, plainGenericPool } from './pool-subjects.js';

/**
 * A factory whose first `failures` connects fail for real (the server refuses a database
 * that does not exist, SQLSTATE 3D000); later ones connect. `creates` counts the calls.
 */
function failingFirst(failures: number): ClientFactory<pg.Client> & { readonly creates: number } {
  let creates = 0;
  return {
    ...pgClientFactory,
    get creates() {
      return creates;
    },
    create: (config, host, signal) => {
      creates++;
      if (creates > failures) return pgClientFactory.create(config, host, signal);
      const missing = ConnectionConfig.create({
        host: host.host,
        port: host.port,
        user: config.user,
        password: config.password,
        database: 'no_such_database',
      });
      return pgClientFactory.create(missing, host, signal);
    },
  };
}

/** What one checkout got: a client, or the error's SQLSTATE. */
async function checkoutOutcome(pool: PoolSubject): Promise<string> {
  try {
    const client = await pool.acquire();
    await pool.release(client);
    return 'client';
  } catch (error) {
    return `error ${(error as { code?: string }).code}`;
  }
}

describe('a failed connect (FailedCreate): the same scenario on generic-pool and HotloadGenericPool', () => {
  const suite = useAppDatabases();

  it('generic-pool retries a failing create unseen; HotloadGenericPool fails the checkout at once with the real error', async () => {
    const outcomes: Record<PoolSubject['name'], { outcome: string; creates: number }> = {
      'generic-pool': { outcome: '', creates: 0 },
      'hotload-generic-pool': { outcome: '', creates: 0 },
    };
    for (const make of [plainGenericPool, hotloadGenericPool]) {
      const factory = failingFirst(3);
      const pool = await make({
        server: suite.clusters[0]!,
        user: 'app_a',
        password: suite.passwords.app_a,
        secretDirectory: suite.secret.path,
        pool: { max: 1 },
        factory,
      });
      try {
        outcomes[pool.name] = { outcome: await checkoutOutcome(pool), creates: factory.creates };
      } finally {
        await pool.end();
      }
    }
    // generic-pool calls create again at once while anyone waits: the caller never hears
    // of the failures (a wrong password would be a connection storm and a hanging checkout).
    expect(outcomes['generic-pool']).toEqual({ outcome: 'client', creates: 4 });
    // HotloadGenericPool hands the failure to the checkout that caused it, as pg.Pool would.
    expect(outcomes['hotload-generic-pool']).toEqual({ outcome: 'error 3D000', creates: 1 });
  });
});
