/**
 * The bounded credential wait, by difference against plain Knex: a login refused for its
 * credentials with no new secret coming fails once `credentialWaitMillis` ran out, with
 * the error plain Knex gives; any other connect failure fails at once, as with plain Knex.
 * (A refused login served by the new secret's generation: rotation-under-load.test.ts.)
 */
import { createHotloadKnex } from 'hotload-knex';
import {
  APP_DATABASE,
  FaultProxy,
  SecretDirectory,
  type ServerAddress,
  useAppDatabases,
} from 'hotload-test-support';
import knex from 'knex';
import { describe, expect, it } from 'vitest';

/** The error of one query on `server` as `app_a` with `password`: plain Knex, then hotload-knex. */
async function firstQueryErrors(
  server: ServerAddress,
  password: string,
  credentialWaitMillis: number,
): Promise<{ plain: unknown; hotload: unknown }> {
  const plain = knex({
    client: 'pg',
    connection: { host: server.host, port: server.port, user: 'app_a', password, database: APP_DATABASE },
    pool: { min: 0, max: 1 },
  });
  const secret = new SecretDirectory();
  await secret.write(server, 'app_a', password);
  const db = await createHotloadKnex({
    hotload: { source: { secretDirectory: secret.path }, credentialWaitMillis },
    pool: { min: 0, max: 1 },
  });
  try {
    return {
      plain: await plain.raw('SELECT 1').catch((error: unknown) => error),
      hotload: await db.raw('SELECT 1').catch((error: unknown) => error),
    };
  } finally {
    await plain.destroy();
    await db.destroy();
    secret.remove();
  }
}

describe('Knex: the bounded wait after a refused login', () => {
  const { clusters } = useAppDatabases();

  it('fails a login refused for its credentials once credentialWaitMillis ran out, as plain Knex fails it', async () => {
    const { plain, hotload } = await firstQueryErrors(clusters[0]!, 'not-the-password', 200);
    expect(plain).toMatchObject({ code: '28P01' });
    expect(hotload).toMatchObject({ code: '28P01', message: (plain as Error).message });
  });

  it('fails any other connect failure at once, whatever credentialWaitMillis is', async () => {
    // A port nobody listens on: connection refused, not a credential failure. A wait this
    // long would run into Knex's acquireConnectionTimeout and fail with its timeout instead.
    const proxy = await FaultProxy.start({ host: clusters[0]!.host, port: clusters[0]!.port });
    await proxy.close();
    const { plain, hotload } = await firstQueryErrors(proxy, 'not-the-password', 600_000);
    expect(plain).toMatchObject({ code: 'ECONNREFUSED' });
    expect(hotload).toMatchObject({ code: 'ECONNREFUSED', message: (plain as Error).message });
  });
});
