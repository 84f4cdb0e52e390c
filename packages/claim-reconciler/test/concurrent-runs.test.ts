/**
 * Two real CLI processes at once on the same claims and the same --out (two replicas, or a
 * manual --rotate during --watch): both finish, and every published secret logs in, with
 * no folder left beside the one `..data` points to. The per-claim advisory lock serializes
 * them; the second observes what the first published.
 */
import { mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readStatus, statusPath } from '../src/index.js';
import { runCli } from './cli-runner.js';
import { canLogin, claimYaml, useReconcilerCluster } from './fixtures.js';

const suite = useReconcilerCluster();
const NAMES = ['race_one', 'race_two', 'race_three'];

async function claimsFolder(): Promise<string> {
  const dir = join(suite.work.path, 'claims-race');
  await mkdir(dir, { recursive: true });
  for (const name of NAMES) {
    await writeFile(
      join(dir, `${name}.yaml`),
      claimYaml(name.replace(/_/g, '-'), { databaseName: name, instanceLabel: 'atlas', userName: name }),
    );
  }
  return dir;
}

async function expectEverySecretLogsIn(out: string): Promise<void> {
  for (const name of NAMES) {
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
    const claims = await claimsFolder();
    const out = join(suite.work.path, 'out-race');
    const args = ['reconcile', '--config', suite.configFile, '--claims', claims, '--out', out];
    const first = await Promise.all([runCli(args), runCli(args)]);
    expect(first.map((run) => [run.code, run.stderr])).toEqual([
      [0, ''],
      [0, ''],
    ]);
    await expectEverySecretLogsIn(out);
    for (let round = 0; round < 3; round++) {
      const runs = await Promise.all([runCli([...args, '--rotate']), runCli([...args, '--rotate'])]);
      expect(runs.map((run) => [run.code, run.stderr])).toEqual([
        [0, ''],
        [0, ''],
      ]);
      await expectEverySecretLogsIn(out);
    }
  });
});
