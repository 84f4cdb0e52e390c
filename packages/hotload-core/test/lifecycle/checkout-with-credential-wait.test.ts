import { join } from 'node:path';
import { checkoutWithCredentialWait, GenerationManager } from 'hotload-core';
import { APP_DATABASE, newPassword, setPassword, useAppDatabases } from 'hotload-test-support';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { type ClientGeneration, PgClientDriver } from './pg-client-driver.js';

type Manager = GenerationManager<ClientGeneration, pg.Client>;

/** One checkout: a connected client's session user, on `generation`, the client closed again. */
async function sessionUserOn(generation: ClientGeneration): Promise<{ generation: number; user: unknown }> {
  const client = await generation.open();
  try {
    const { rows } = await client.query('SELECT session_user AS u');
    return { generation: generation.id, user: rows[0]?.u };
  } finally {
    await generation.close(client);
  }
}

describe('checkoutWithCredentialWait on a real lifecycle and PostgreSQL', () => {
  const { secret, passwords, clusters } = useAppDatabases();

  /**
   * A libpq-environment source: a new PGPASSWORD in its env object makes no file event,
   * so only the lifecycle's re-read after the refused login can find it.
   */
  function managerOnEnv(credentialWaitMillis?: number): { manager: Manager; env: Record<string, string> } {
    const cluster = clusters[0]!;
    const env = {
      PGHOST: cluster.host,
      PGPORT: String(cluster.port),
      PGUSER: 'app_b',
      PGPASSWORD: passwords.app_b,
      PGDATABASE: APP_DATABASE,
      PGPASSFILE: join(secret.path, 'no-pgpass'),
    };
    const manager = new GenerationManager(new PgClientDriver(), {
      source: { libpqEnv: true, env },
      ...(credentialWaitMillis === undefined ? {} : { credentialWaitMillis }),
    });
    return { manager, env };
  }

  it('after a refused login waits for the new secret and checks out of its generation', async () => {
    const { manager, env } = managerOnEnv();
    try {
      const first = await manager.whenServing();
      const password = newPassword();
      await setPassword(clusters[0]!, 'app_b', password);
      passwords.app_b = password;
      env.PGPASSWORD = password;
      const tried: number[] = [];
      const result = await checkoutWithCredentialWait(manager, {
        checkout: (generation) => {
          tried.push(generation.id);
          return sessionUserOn(generation);
        },
      });
      expect(tried).toEqual([first.id, first.id + 1]);
      expect(result).toEqual({ generation: first.id + 1, user: 'app_b' });
    } finally {
      await manager.close();
    }
  });

  it('fails with the refused login when no new secret comes within credentialWaitMillis', async () => {
    const { manager } = managerOnEnv(50);
    try {
      await manager.whenServing();
      const password = newPassword();
      await setPassword(clusters[0]!, 'app_b', password);
      passwords.app_b = password; // the source still holds the old one
      const refused = await checkoutWithCredentialWait(manager, { checkout: sessionUserOn }).catch(
        (error: unknown) => error,
      );
      expect(refused).toMatchObject({ code: '28P01' });
    } finally {
      await manager.close();
    }
  });

  it('fails at once with any other error, and with an error the driver says is not retryable', async () => {
    const { manager } = managerOnEnv();
    try {
      const generation = await manager.whenServing();
      let attempts = 0;
      const missingTable = async (on: ClientGeneration): Promise<unknown> => {
        attempts++;
        const client = await on.open();
        try {
          return await client.query('SELECT * FROM no_such_table');
        } finally {
          await on.close(client);
        }
      };
      await expect(checkoutWithCredentialWait(manager, { checkout: missingTable })).rejects.toMatchObject({
        code: '42P01',
      });
      expect(attempts).toBe(1);
      const password = newPassword();
      await setPassword(clusters[0]!, 'app_b', password);
      passwords.app_b = password;
      const notRetried = checkoutWithCredentialWait(manager, {
        checkout: sessionUserOn,
        retryable: () => false,
      });
      await expect(notRetried).rejects.toMatchObject({ code: '28P01' });
      // Not reported either: the lifecycle still serves the generation it had.
      expect(manager.generation).toBe(generation.id);
    } finally {
      await manager.close();
    }
  });

  it('checks out again of the serving generation when the driver does not keep a checkout', async () => {
    const { manager } = managerOnEnv();
    try {
      const first = await manager.whenServing();
      const kept: number[] = [];
      let offered = 0;
      const result = await checkoutWithCredentialWait(manager, {
        from: first,
        checkout: sessionUserOn,
        keep: (checkout) => {
          offered++;
          if (offered === 1) return false; // as a driver whose generation was replaced meanwhile
          kept.push(checkout.generation);
          return true;
        },
      });
      expect(offered).toBe(2);
      expect(kept).toEqual([first.id]);
      expect(result.user).toBe('app_b');
    } finally {
      await manager.close();
    }
  });
});
