/**
 * The CLI as a script sees it: exit codes, `--json`, human output, hostile claims that
 * never reach SQL, no password in any output, and `--watch` reacting to a new claim file.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from './cli-runner.js';
import { claimYaml, useReconcilerCluster } from './fixtures.js';

const suite = useReconcilerCluster();

async function folderWith(name: string, files: Record<string, string>): Promise<string> {
  const dir = join(suite.work.path, name);
  await mkdir(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
  return dir;
}

/** The CLI's `reconcile` with `flag` (`--json` or `--rotate`). */
function reconcile(flag: '--json' | '--rotate', config: string, claims: string, out: string) {
  return runCli(['reconcile', flag, '--config', config, '--claims', claims, '--out', out]);
}

async function catalogSnapshot(): Promise<string> {
  const roles = await suite.cluster.query<{ n: string }>(
    "SELECT string_agg(rolname, ',' ORDER BY rolname) AS n FROM pg_roles",
  );
  const dbs = await suite.cluster.query<{ n: string }>(
    "SELECT string_agg(datname, ',' ORDER BY datname) AS n FROM pg_database",
  );
  return `${roles.rows[0]?.n}|${dbs.rows[0]?.n}`;
}

describe('exit codes and output', () => {
  it('exits 2 on bad usage and on an invalid config, naming the problem', async () => {
    const usage = await runCli(['reconcile', '--config', suite.configFile]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--config, --claims and --out are required');

    const badConfig = join(suite.work.path, 'bad-config.yaml');
    await writeFile(badConfig, 'passwordConfig:\n  minPasswordLength: 100\n');
    const claims = await folderWith('claims-empty', {});
    const run = await reconcile('--json', badConfig, claims, join(suite.work.path, 'o'));
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toMatchObject({
      exitCode: 2,
      error: expect.stringContaining('passwordConfig.minPasswordLength'),
    });
  });

  it('reconciles with --json, prints human progress otherwise, and never prints a password', async () => {
    const claims = await folderWith('claims-ok', {
      'a.yaml': claimYaml('cli-app', {
        databaseName: 'cli_app',
        instanceLabel: 'atlas',
        userName: 'cli_app',
      }),
    });
    const out = join(suite.work.path, 'out-ok');
    const first = await reconcile('--json', suite.configFile, claims, out);
    expect(first.code).toBe(0);
    const report = JSON.parse(first.stdout);
    expect(report).toMatchObject({
      exitCode: 0,
      outcomes: [{ claim: 'default/cli-app', result: 'created', activeUser: 'cli_app_a' }],
    });
    const firstPassword = await readFile(join(out, 'default', 'cli-app', 'password'), 'utf8');

    const rotated = await reconcile('--rotate', suite.configFile, claims, out);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(/✓ default\/cli-app: rotated \(rotation requested: published cli_app_b\)/);
    expect(rotated.stdout).toMatch(/1 claim\(s\): 1 rotated in \d+\.\d+ s/);
    const secondPassword = await readFile(join(out, 'default', 'cli-app', 'password'), 'utf8');
    const status = await readFile(join(out, 'default', 'cli-app.status.json'), 'utf8');
    for (const text of [first.stdout, first.stderr, rotated.stdout, rotated.stderr, status]) {
      expect(text).not.toContain(firstPassword);
      expect(text).not.toContain(secondPassword);
    }
  });

  it('rejects hostile claims with exit 1 and runs no SQL for them', async () => {
    const hostile = (name: string, spec: Record<string, string>) =>
      claimYaml(name, { databaseName: 'hostile_db', instanceLabel: 'atlas', userName: 'hostile', ...spec });
    const claims = await folderWith('claims-hostile', {
      'quote.yaml': hostile('quote', { userName: 'x"; DROP ROLE postgres; --' }),
      'literal.yaml': hostile('literal', { databaseName: "db'; DROP DATABASE postgres; --" }),
      'long.yaml': hostile('long', { databaseName: 'd'.repeat(64) }),
      'semicolon.yaml': hostile('semicolon', { userName: 'a;b' }),
      'path.yaml': hostile('path', { secretName: '../../etc' }),
    });
    const before = await catalogSnapshot();
    const out = join(suite.work.path, 'out-hostile');
    const run = await reconcile('--json', suite.configFile, claims, out);
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.outcomes).toEqual([]); // no claim reached the reconciler, so no SQL ran
    expect(
      report.problems.map((p: { claim: string; path: string }) => `${p.claim} ${p.path}`).sort(),
    ).toEqual([
      'default/literal spec.databaseName',
      'default/long spec.databaseName',
      'default/path spec.secretName',
      'default/quote spec.userName',
      'default/semicolon spec.userName',
    ]);
    expect(await catalogSnapshot()).toBe(before);
    expect(await readdir(out).catch(() => [])).toEqual([]);
  });
});

describe('--watch', () => {
  it('reconciles a claim file added while running, and exits 0 on SIGTERM', async () => {
    const claims = await folderWith('claims-watch', {});
    const out = join(suite.work.path, 'out-watch');
    const child = startCli(
      ['reconcile', '--watch', '--json', '--config', suite.configFile, '--claims', claims, '--out', out],
      { stderr: 'inherit' },
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const nextPass = async () => JSON.parse(((await lines.next()).value as string) ?? 'null');
      expect(await nextPass()).toMatchObject({ exitCode: 0, outcomes: [] });
      await writeFile(
        join(claims, 'w.yaml'),
        claimYaml('watched', { databaseName: 'watched', instanceLabel: 'atlas', userName: 'watched' }),
      );
      // Bounded: each pass is one line; the new claim shows up within a few passes.
      let created = false;
      for (let pass = 0; pass < 5 && !created; pass++) {
        const report = await nextPass();
        created = report.outcomes.some(
          (o: { claim: string; result: string }) => o.claim === 'default/watched' && o.result === 'created',
        );
      }
      expect(created).toBe(true);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
