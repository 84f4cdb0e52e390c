import { createPgModule, Pool } from 'hotload-pg';
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configFor } from './helpers.js';

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

describe('createPgModule', () => {
  it("offers what require('pg') offers, with pg's own members and hotload's Pool", () => {
    const module = createPgModule();
    for (const key of Object.keys(pg)) expect(module, key).toHaveProperty(key);
    expect(module.Client).toBe(pg.Client);
    expect(module.types).toBe(pg.types);
    expect(module.defaults).toBe(pg.defaults);
    expect(module.DatabaseError).toBe(pg.DatabaseError);
    expect(module.escapeIdentifier('a"b')).toBe('"a""b"');
    expect(module.native).toBeNull();
    expect(new module.Pool()).toBeInstanceOf(Pool);
  });

  it('builds Pools whose hotload options come from the module and from the pool config', async () => {
    const module = createPgModule({ drainTimeoutMillis: 1_000 });
    const pool = new module.Pool({
      ...cluster.connectionConfig(),
      hotload: { verifyRetryInitialMillis: 10 },
    });
    expect((await pool.query('SELECT 1 AS ok')).rows).toEqual([{ ok: 1 }]);
    await pool.switchTo(configFor(cluster, { applicationName: 'via-module' }));
    expect((await pool.query('SHOW application_name')).rows[0].application_name).toBe('via-module');
    await pool.end();
  });

  it('runs plain pg Clients (Client is pg.Client)', async () => {
    const module = createPgModule();
    const client = new module.Client(cluster.connectionConfig());
    await client.connect();
    expect((await client.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    await client.end();
  });
});
