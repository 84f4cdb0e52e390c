/**
 * hotload-pg on the oldest pg it supports (peer range ">=8.11 <9"): an app whose own pg is
 * 8.11.6 (the `pg-old` alias, with the pg-pool 3.6.2 it shipped with) runs in a child
 * process where every `import 'pg'` resolves to that copy. hotload-pg must build its
 * generations from the app's pg, and its Pool must be a `pg.Pool` of that pg (Prisma's
 * adapter checks exactly `instanceof pg.Pool`). The typings side is in types.test.ts.
 */
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '../../..');

let cluster: PostgresCluster;
beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await cluster?.stop();
});

describe('an app on pg 8.11', () => {
  it("uses the app's pg: Pool instanceof its pg.Pool, queries and a switch work", async () => {
    const connection = cluster.connectionConfig();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--import', join(here, 'old-pg/use-old-pg.mjs'), join(here, 'old-pg/app.ts')],
      {
        cwd: repo,
        env: {
          ...process.env,
          PGHOST: connection.host,
          PGPORT: String(connection.port),
          PGUSER: connection.user,
          PGPASSWORD: connection.password,
          PGDATABASE: connection.database,
        },
      },
    );
    expect(JSON.parse(stdout.trim().split('\n').at(-1) ?? '')).toEqual({
      pgIsOld: true,
      instanceOfAppPg: true,
      defaultExportInstanceOfAppPg: true,
      clientIsAppPg: true,
      first: 1,
      second: connection.user,
      third: 3,
      generation: 2,
    });
  });
});
