/**
 * Two real CLI processes at once on the same claims and the same --out (two replicas, or a
 * manual --rotate during --watch): both finish, and every published secret logs in, with
 * no folder left beside the one `..data` points to. The per-claim advisory lock serializes
 * them; the second observes what the first published.
 */
import { mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { canLogin, claimYaml, useReconcilerCluster } from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import { readStatus, statusPath } from '../../src/index.js';
import { reconcileArgs, runCli } from './cli-runner.js';

const suite = useReconcilerCluster();
const RACE = ['race_one', 'race_two', 'race_three'];
const TWO_FOLDERS = ['two_one', 'two_two'];

/** A claims folder with one claim per name (also its user and database name). */
async function claimsFolder(names: readonly string[]): Promise<string> {
  const dir = join(suite.work.path, `claims-${names[0]}`);
  await mkdir(dir, { recursive: true });
  for (const name of names) {
    await writeFile(
      join(dir, `${name}.yaml`),
      claimYaml(name.replace(/_/g, '-'), { databaseName: name, instanceLabel: 'atlas', userName: name }),
    );
  }
  return dir;
}

async function expectEverySecretLogsIn(out: string, names: readonly string[]): Promise<void> {
  for (const name of names) {
    const dir = join(out, 'default', name.replace(/_/g, '-'));
    const user = await readFile(join(dir, 'username'), 'utf8');
    const password = await readFile(join(dir, 'password'), 'utf8');
    expect(await canLogin(suite.cluster, user, password, name)).toBe(true);
    const hidden = (await readdir(dir)).filter((entry) => entry.startsWith('..'));
    expect(hidden.sort()).toEqual(['..data', await readlink(join(dir, '..data'))].sort());
    expect((await readStatus(statusPath(out, 'default', name.replace(/_/g, '-'))))?.activeUser).toBe(user);
  }
  const leftovers = (await readdir(join(out, 'default'))).filter((entry) => entry.endsWith('.tmp'));
  expect(leftovers).toEqual([]);
}

describe('two reconcilers at once', () => {
  it('first provisioning, then rotations: both processes exit 0 and the published passwords log in', async () => {
    const claims = await claimsFolder(RACE);
    const out = join(suite.work.path, 'out-race');
    const args = reconcileArgs(suite.configFile, claims, out);
    const first = await Promise.all([runCli(args), runCli(args)]);
    expect(first.map((run) => [run.code, run.stderr])).toEqual([
      [0, ''],
      [0, ''],
    ]);
    await expectEverySecretLogsIn(out, RACE);
    for (let round = 0; round < 3; round++) {
      const runs = await Promise.all([runCli([...args, '--rotate']), runCli([...args, '--rotate'])]);
      expect(runs.map((run) => [run.code, run.stderr])).toEqual([
        [0, ''],
        [0, ''],
      ]);
      await expectEverySecretLogsIn(out, RACE);
    }
  });
});

describe('two output folders for the same claims', () => {
  it('the second folder is refused (the first one keeps a working password) until --take-over', async () => {
    const claims = await claimsFolder(TWO_FOLDERS);
    const first = join(suite.work.path, 'out-first');
    const second = join(suite.work.path, 'out-second');
    const args = (out: string) => reconcileArgs(suite.configFile, claims, out);
    expect((await runCli(args(first))).code).toBe(0);

    const refused = await runCli([...args(second), '--rotate']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(
      /✗ default\/two-one: users two_one_a, two_one_b are published by another output \(publisher folder-[0-9a-f]+\)/,
    );
    expect(refused.stdout).toContain('--take-over');
    expect(await readdir(join(second, 'default')).catch(() => [])).toEqual(
      TWO_FOLDERS.map((name) => `${name.replace(/_/g, '-')}.status.json`).sort(),
    ); // a status with the error, no secret folder
    await expectEverySecretLogsIn(first, TWO_FOLDERS);

    // The first folder is gone for good: the second takes the claims over and publishes.
    const taken = await runCli([...args(second), '--take-over']);
    expect(taken.code).toBe(0);
    await expectEverySecretLogsIn(second, TWO_FOLDERS);
    expect((await runCli(args(first))).code).toBe(1); // and now the first one is refused
  });
});
