/**
 * Crash injection during an online migration: the real CLI is killed with SIGKILL before
 * each state-changing step of a move (HOTLOAD_RECONCILER_CRASH_AT_STEP=N, every migration
 * step included), then an ordinary pass runs. After it: the secret points at the target,
 * every row is there, and no publication, subscription, slot or replication login is left.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LOGICAL_REPLICATION_SETTINGS, type PostgresCluster } from 'hotload-test-support';
import { claimYaml, startReconcilerInstances, withSecretClient } from 'hotload-test-support/claims';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadClaimsFromDirectory,
  parseReconcilerConfig,
  Reconciler,
  readStatus,
  statusPath,
} from '../../src/index.js';
import { replicationName } from '../../src/migration/replication-names.js';
import { runCli } from '../folder/cli-runner.js';
import { MOVE_STEPS } from './migration-steps.js';

let a: PostgresCluster;
let b: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let configFile: string;
const MAX_STEPS = 80; // bounds the loop; a move has about forty steps
const ROWS = 300;

beforeAll(async () => {
  const logical = { settings: LOGICAL_REPLICATION_SETTINGS };
  let clusters: Record<'src' | 'dst', PostgresCluster>;
  ({ clusters, work, configFile } = await startReconcilerInstances({ src: logical, dst: logical }));
  ({ src: a, dst: b } = clusters);
});

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await work?.cleanup();
});

async function writeClaim(dir: string, name: string, label: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'claim.yaml'),
    claimYaml(name.replace(/_/g, '-'), {
      databaseName: name,
      instanceLabel: label,
      userName: name,
      deletionPolicy: 'Delete',
    }),
  );
}

/** One in-process pass over the claims folder (crashes are only injected into the CLI). */
async function pass(claimsDir: string, out: string) {
  const config = parseReconcilerConfig(await readFile(configFile, 'utf8'), configFile);
  const { claims } = await loadClaimsFromDirectory(claimsDir);
  return (await new Reconciler({ config, outputDir: out }).reconcile(claims)).outcomes;
}

async function on(cluster: PostgresCluster, database: string, sql: string, values: unknown[] = []) {
  const client = new pg.Client(cluster.connectionConfig({ database }));
  await client.connect();
  try {
    return (await client.query(sql, values)).rows;
  } finally {
    await client.end();
  }
}

async function expectConverged(claimsDir: string, out: string, name: string): Promise<void> {
  // Normally one pass; a statement the killed process left running on the server (it runs
  // to its end there) may make the first pass report a retryable error.
  let outcomes = await pass(claimsDir, out);
  for (let retry = 0; retry < 2 && outcomes[0]?.result === 'error'; retry++)
    outcomes = await pass(claimsDir, out);
  expect(outcomes[0]?.error).toBeUndefined();
  const dir = join(out, 'default', name.replace(/_/g, '-'));
  expect(Number(await readFile(join(dir, 'port'), 'utf8'))).toBe(b.port);
  expect(
    await withSecretClient(dir, async (c) => (await c.query('SELECT count(*)::int AS n FROM t')).rows),
  ).toEqual([{ n: ROWS }]);
  const status = await readStatus(statusPath(out, 'default', name.replace(/_/g, '-')));
  expect(status).toMatchObject({ error: null, retired: [], migration: { phase: 'done' } });
  const link = replicationName(`default/${name.replace(/_/g, '-')}`, `${b.host}:${b.port}/${name}`);
  expect({
    slots: await on(a, 'postgres', 'SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [link]),
    logins: await on(a, 'postgres', 'SELECT 1 FROM pg_roles WHERE rolname = $1', [link]),
    subscriptions: await on(b, name, 'SELECT 1 FROM pg_subscription WHERE subname = $1', [link]),
    sourceDatabase: await on(a, 'postgres', 'SELECT 1 FROM pg_database WHERE datname = $1', [name]),
    // A synchronous standby left named would hold every commit on the source instance.
    synchronousStandbys: await on(
      a,
      'postgres',
      `SELECT setting FROM pg_file_settings WHERE name = 'synchronous_standby_names'`,
    ),
  }).toEqual({ slots: [], logins: [], subscriptions: [], sourceDatabase: [], synchronousStandbys: [] });
}

describe('crash safety of a migration', () => {
  it('converges after a crash at every step of a move', { timeout: 900_000 }, async () => {
    let completedAt: number | undefined;
    const crashedAt: string[] = [];
    for (let step = 1; step <= MAX_STEPS && completedAt === undefined; step++) {
      const name = `mig_c${step}`;
      const claimsDir = join(work.path, `claims-${name}`);
      const out = join(work.path, `out-${name}`);
      await writeClaim(claimsDir, name, 'src');
      expect((await pass(claimsDir, out))[0]?.result).toBe('created');
      await withSecretClient(join(out, 'default', name.replace(/_/g, '-')), (c) =>
        c.query(
          `CREATE TABLE t (id serial PRIMARY KEY, v text); INSERT INTO t (v) SELECT 'r' || g FROM generate_series(1, ${ROWS}) g`,
        ),
      );
      await writeClaim(claimsDir, name, 'dst');
      const run = await runCli(['reconcile', '--config', configFile, '--claims', claimsDir, '--out', out], {
        HOTLOAD_RECONCILER_CRASH_AT_STEP: String(step),
      });
      if (run.signal === null) {
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        completedAt = step;
      } else {
        expect(run.signal).toBe('SIGKILL');
        crashedAt.push(/crashing at step \d+: (.*)/.exec(run.stderr)?.[1] ?? run.stderr);
      }
      await expectConverged(claimsDir, out, name);
    }
    expect(completedAt).toBeDefined();
    // Every migration step was crashed at least once.
    expect(crashedAt).toEqual(expect.arrayContaining([...MOVE_STEPS, 'publish-secret']));
  });
});
