/**
 * Crash injection: the real CLI is killed with SIGKILL before each state-changing step of
 * provisioning and of rotation (HOTLOAD_RECONCILER_CRASH_AT_STEP=N), including the steps
 * inside a publish (new folder written, `..data` swapped, old folder removed). Right after
 * the crash the published secret, if any, logs in; a restart converges, its secret logs
 * in, and no folder besides the one `..data` points to is left (no stale password).
 */
import { mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PostgresCluster } from 'hotload-test-support';
import { canLogin, claimYaml, startReconcilerCluster } from 'hotload-test-support/claims';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANAGED_ROLE_MARKER, PUBLISHER_ID_FILE, readStatus, statusPath } from '../../src/index.js';
import { runCli } from './cli-runner.js';

let cluster: PostgresCluster;
let work: { path: string; cleanup: () => Promise<void> };
let configFile: string;
const MAX_STEPS = 30; // bounds the loops; provisioning has about fifteen steps
/**
 * Each loop starts two real CLI processes per step (crash, then converge), about 30 in
 * all: on a shared 2-core machine that can outlast the suite's 60 s default. A bound on a
 * hang, not a speed check.
 */
const LOOP_TIMEOUT_MILLIS = 300_000;

beforeAll(async () => {
  ({ cluster, work, configFile } = await startReconcilerCluster('main'));
});

afterAll(async () => {
  await cluster?.stop();
  await work?.cleanup();
});

/** A claims folder with one claim named `name` (also its user and database name). */
async function claimsFolder(name: string, deletionPolicy = 'Orphan'): Promise<string> {
  const dir = join(work.path, `claims-${name}`);
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'claim.yaml'),
    claimYaml(name.replace(/_/g, '-'), {
      databaseName: name,
      instanceLabel: 'main',
      userName: name,
      deletionPolicy,
    }),
  );
  return dir;
}

/** Whether the secret (if published) logs in; undefined when there is no secret. */
async function secretLogsIn(out: string, name: string): Promise<boolean | undefined> {
  const dir = join(out, 'default', name.replace(/_/g, '-'));
  let user: string;
  let password: string;
  try {
    user = await readFile(join(dir, 'username'), 'utf8');
    password = await readFile(join(dir, 'password'), 'utf8');
  } catch {
    return undefined;
  }
  return canLogin(cluster, user, password, name);
}

async function expectConverged(claims: string, out: string, name: string): Promise<void> {
  const restart = await runCli(['reconcile', '--config', configFile, '--claims', claims, '--out', out]);
  expect(restart.stderr).toBe('');
  expect(restart.code).toBe(0);
  expect(await secretLogsIn(out, name)).toBe(true);
  const dir = join(out, 'default', name.replace(/_/g, '-'));
  const hidden = (await readdir(dir)).filter((entry) => entry.startsWith('..'));
  expect(hidden.sort()).toEqual(['..data', await readlink(join(dir, '..data'))].sort());
  const status = await readStatus(statusPath(out, 'default', name.replace(/_/g, '-')));
  expect(status?.activeUser).toBe(
    await readFile(join(out, 'default', name.replace(/_/g, '-'), 'username'), 'utf8'),
  );
  expect(status?.error).toBeNull();
  // Every role of the claim carries the marker: no crash leaves a role of ours unmarked.
  const { rows } = await cluster.query<{ rolname: string; comment: string | null }>(
    `SELECT rolname, shobj_description(oid, 'pg_authid') AS comment FROM pg_roles
      WHERE rolname = ANY($1::text[]) ORDER BY 1`,
    [[name, `${name}_a`, `${name}_b`]],
  );
  // The base role also names this output folder as the claim's one publisher.
  const publisher = (await readFile(join(out, PUBLISHER_ID_FILE), 'utf8')).trim();
  expect(rows).toEqual([
    { rolname: name, comment: `${MANAGED_ROLE_MARKER}; publisher ${publisher}` },
    ...[`${name}_a`, `${name}_b`].map((rolname) => ({ rolname, comment: MANAGED_ROLE_MARKER })),
  ]);
}

/** The action the CLI was killed before (it names it on stderr as it crashes). */
function crashedAction(stderr: string): string {
  return /crashing at step \d+: (.*)/.exec(stderr)?.[1] ?? `(no crash line in: ${stderr})`;
}

const PUBLISH_STEPS = ['publish-secret:write-files', 'publish-secret:swap-data', 'publish-secret:remove-old'];

describe('crash safety', () => {
  it(
    'converges after a crash at every step of first provisioning',
    async () => {
      let completedAt: number | undefined;
      const crashedAt: string[] = [];
      for (let step = 1; step <= MAX_STEPS && completedAt === undefined; step++) {
        const name = `crash_p${step}`;
        const claims = await claimsFolder(name);
        const out = join(work.path, `out-${name}`);
        const run = await runCli(['reconcile', '--config', configFile, '--claims', claims, '--out', out], {
          HOTLOAD_RECONCILER_CRASH_AT_STEP: String(step),
        });
        if (run.signal === null) {
          expect(run.code).toBe(0);
          completedAt = step;
        } else {
          crashedAt.push(crashedAction(run.stderr));
          expect(run.signal).toBe('SIGKILL');
          expect(await secretLogsIn(out, name)).not.toBe(false); // absent, or working
        }
        await expectConverged(claims, out, name);
      }
      expect(completedAt).toBeGreaterThan(8); // every step of provisioning was crashed once
      expect(crashedAt).toEqual(expect.arrayContaining(['publish-secret', ...PUBLISH_STEPS]));
    },
    LOOP_TIMEOUT_MILLIS,
  );

  it(
    'keeps a working secret through a crash at every step of a rotation',
    async () => {
      const name = 'crash_rotation';
      const claims = await claimsFolder(name);
      const out = join(work.path, `out-${name}`);
      expect(
        (await runCli(['reconcile', '--config', configFile, '--claims', claims, '--out', out])).code,
      ).toBe(0);
      let completedAt: number | undefined;
      const crashedAt: string[] = [];
      for (let step = 1; step <= MAX_STEPS && completedAt === undefined; step++) {
        const before = await readFile(join(out, 'default', 'crash-rotation', 'username'), 'utf8');
        const run = await runCli(
          ['reconcile', '--rotate', '--config', configFile, '--claims', claims, '--out', out],
          {
            HOTLOAD_RECONCILER_CRASH_AT_STEP: String(step),
          },
        );
        if (run.signal === null) {
          expect(run.code).toBe(0);
          expect(await readFile(join(out, 'default', 'crash-rotation', 'username'), 'utf8')).not.toBe(before);
          completedAt = step;
        } else {
          crashedAt.push(crashedAction(run.stderr));
          expect(run.signal).toBe('SIGKILL');
          expect(await secretLogsIn(out, name)).toBe(true);
        }
        await expectConverged(claims, out, name);
      }
      // Every step of a rotation, the three inside the publish included, was crashed once.
      expect(crashedAt.map((action) => action.replace(/ crash_rotation_[ab]$/, ''))).toEqual([
        'set-password',
        'publish-secret',
        ...PUBLISH_STEPS,
        'write-status',
        'rename-status',
      ]);
    },
    LOOP_TIMEOUT_MILLIS,
  );

  it(
    'completes a --prune deletion after a crash at every step of it',
    async () => {
      let completedAt: number | undefined;
      const crashedAt: string[] = [];
      for (let step = 1; step <= MAX_STEPS && completedAt === undefined; step++) {
        const name = `crash_d${step}`;
        const claims = await claimsFolder(name, 'Delete');
        const out = join(work.path, `out-${name}`);
        const args = ['reconcile', '--config', configFile, '--out', out];
        expect((await runCli([...args, '--claims', claims])).code).toBe(0);
        const empty = join(work.path, `claims-empty-${name}`);
        await mkdir(empty, { recursive: true });
        const run = await runCli([...args, '--claims', empty, '--prune'], {
          HOTLOAD_RECONCILER_CRASH_AT_STEP: String(step),
        });
        if (run.signal === null) {
          expect(run.code).toBe(0);
          completedAt = step;
        } else {
          expect(run.signal).toBe('SIGKILL');
          crashedAt.push(crashedAction(run.stderr).replace(/ crash_d\d+(_[ab])?$/, ''));
        }
        const restart = await runCli([...args, '--claims', empty, '--prune']);
        expect(restart.stderr).toBe('');
        expect(restart.code).toBe(0);
        expect(await readdir(join(out, 'default'))).toEqual([]); // no secret, status or temp file
        expect((await readdir(out)).sort()).toEqual(['.hotload-publisher-id', 'default']); // no lock left
        const { rows } = await cluster.query(
          'SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1) UNION ALL SELECT datname FROM pg_database WHERE datname = $1',
          [name],
        );
        expect(rows).toEqual([]);
      }
      expect(crashedAt).toEqual([
        'remove-secret',
        'drop-database',
        'drop-role',
        'drop-role',
        'drop-role',
        'remove-status',
      ]);
    },
    LOOP_TIMEOUT_MILLIS,
  );
});
