/**
 * The CLI as a script sees it: exit codes, `--json`, human output, hostile claims that
 * never reach SQL, no password in any output, and `--watch` reacting to a new claim file.
 */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  claimYaml,
  configYaml,
  rolesLike,
  useReconcilerCluster,
  writeMasterPassword,
} from 'hotload-test-support/claims';
import { describe, expect, it } from 'vitest';
import { runCli, startCli } from './cli-runner.js';

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

/** Every statement the server logged while `work` ran (log_statement = 'all' for the call). */
async function statementsDuring<T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  await suite.cluster.query("ALTER SYSTEM SET log_statement = 'all'");
  await suite.cluster.query('SELECT pg_reload_conf()');
  const log = join(suite.cluster.runDir, 'server.log');
  const before = (await stat(log)).size;
  try {
    const result = await work();
    const text = (await readFile(log)).subarray(before).toString('utf8');
    return { result, statements: text.split('\n').filter((line) => line.includes('statement: ')) };
  } finally {
    await suite.cluster.query('ALTER SYSTEM RESET log_statement');
    await suite.cluster.query('SELECT pg_reload_conf()');
  }
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
    const { result: run, statements } = await statementsDuring(() =>
      reconcile('--json', suite.configFile, claims, out),
    );
    expect(statements).toEqual([]); // the server's own log: not one statement, not even a read
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

describe('CLI manners', () => {
  it('-h and --version print and exit 0; a usage error is one line and a pointer to --help', async () => {
    const help = await runCli(['-h']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: hotload-claim-reconciler reconcile/);
    expect(help.stdout).toContain('--prune');
    const version = await runCli(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toBe(
      JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')).version,
    );
    const noPrune = await runCli([
      'reconcile',
      '--max-deletions',
      '1',
      '--config',
      'c',
      '--claims',
      'd',
      '--out',
      'o',
    ]);
    expect(noPrune.code).toBe(2);
    expect(noPrune.stderr.split('\n')[0]).toBe('error: --max-deletions needs --prune');
    const bad = await runCli(['reconcile', '--bogus']);
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr.trim().split('\n')).toEqual([
      "error: Unknown option '--bogus'",
      'run "hotload-claim-reconciler --help" for usage',
    ]);
  });

  it('says an error once, schema errors in words, and refuses fields that would change the outcome', async () => {
    const claims = await folderWith('claims-manners', {
      'missing.yaml': claimYaml('no-label', { databaseName: 'nolabel', userName: 'nolabel' }),
      'reuse.yaml': claimYaml('reuse', {
        databaseName: 'reuse',
        instanceLabel: 'atlas',
        userName: 'reuse',
        restoreFrom: 's3://backups/reuse',
      }),
      'cosmetic.yaml': claimYaml('cosmetic', {
        databaseName: 'cosmetic',
        instanceLabel: 'nowhere',
        userName: 'cosmetic',
        tags: 'team-a',
        enableSuperUser: '',
      }),
    });
    const run = await reconcile('--rotate', suite.configFile, claims, join(suite.work.path, 'out-manners'));
    expect(run.code).toBe(1);
    const lines = run.stdout.split('\n');
    expect(lines).toContain(
      `error: ${join(claims, 'missing.yaml')} (claim default/no-label): spec.instanceLabel is required`,
    );
    expect(lines.find((line) => line.includes('spec.restoreFrom'))).toMatch(
      /^error: .*reuse\.yaml \(claim default\/reuse\): spec\.restoreFrom is not supported: restoring from a backup is not supported: the claim would get an empty database/,
    );
    expect(lines).toContain(
      `warning: ${join(claims, 'cosmetic.yaml')} (claim default/cosmetic): spec.tags is accepted but not used by this reconciler`,
    );
    expect(lines).toContain(
      '✗ default/cosmetic: instanceLabel "nowhere" matches no fragment key (known: atlas)',
    );
    expect(run.stdout).not.toMatch(/error \(error/);
    expect(await rolesLike(suite.cluster, 'reuse')).toEqual([]);
  });

  it("checks each fragment key's own master password, naming the key, host and user", async () => {
    const good = await writeMasterPassword(suite.work.path, suite.cluster, 'good-password');
    const wrong = join(suite.work.path, 'wrong-password');
    await writeFile(wrong, 'not-the-master-password\n');
    const config = join(suite.work.path, 'two-keys.yaml');
    await writeFile(
      config,
      configYaml({
        atlas: { cluster: suite.cluster, passwordFile: good },
        'atlas.wrong': { cluster: suite.cluster, passwordFile: wrong },
      }),
    );
    const claims = await folderWith('claims-two-keys', {
      'good.yaml': claimYaml('good-key', {
        databaseName: 'good_key',
        instanceLabel: 'atlas',
        userName: 'good_key',
      }),
      'wrong.yaml': claimYaml('wrong-key', {
        databaseName: 'wrong_key',
        instanceLabel: 'atlas.wrong.app',
        userName: 'wrong_key',
      }),
    });
    const run = await runCli([
      'reconcile',
      '--config',
      config,
      '--claims',
      claims,
      '--out',
      join(suite.work.path, 'out-two-keys'),
    ]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `✗ default/wrong-key: fragment key atlas.wrong (postgres@${suite.cluster.host}:${suite.cluster.port}): cannot log in as master: password authentication failed for user "postgres"`,
    );
    expect(run.stdout).toMatch(/✓ default\/good-key: created/);
    expect(await rolesLike(suite.cluster, 'wrong_key')).toEqual([]);
    expect(run.stdout).not.toContain('not-the-master-password');
  });

  it("fails on the design seed's sample config (its username=root typo), naming the file", async () => {
    const seed = join(suite.work.path, 'seed-config.yaml');
    await writeFile(
      seed,
      'passwordConfig:\n  passwordComplexity: enabled\n  minPasswordLength: "15"\n  passwordRotationPeriod: "60"\n' +
        'atlas:\n  username: root\n  host: some.service\n  port: 5432\n  sslMode: disable\n' +
        '  passwordSecretRef: atlas-master-password\n  passwordSecretKey: password\n' +
        'athena:\n  username=root\n  host=some.service\n  port=5432\n  sslMode: disable\n' +
        '  passwordSecretRef=athena-master-password\n',
    );
    const claims = await folderWith('claims-seed', {});
    const run = await reconcile('--rotate', seed, claims, join(suite.work.path, 'out-seed'));
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      `error: invalid reconciler config ${seed}: invalid YAML: Implicit keys need to be on a single line at line 13, column 3`,
    );
  });

  it("--metrics-port without prom-client installed: the libraries' clear message, exit 2", async () => {
    // A module hook makes prom-client unresolvable in the child, as if it were not installed.
    const hook = join(suite.work.path, 'no-prom-client.mjs');
    await writeFile(
      hook,
      `import { register } from 'node:module';\n` +
        `register('data:text/javascript,' + encodeURIComponent(\`export async function resolve(s, c, next) {` +
        ` if (s === 'prom-client') { const e = new Error('Cannot find package prom-client'); e.code = 'ERR_MODULE_NOT_FOUND'; throw e; }` +
        ` return next(s, c); }\`));\n`,
    );
    const claims = await folderWith('claims-no-prom', {});
    const run = await runCli(
      [
        'reconcile',
        '--watch',
        '--metrics-port',
        '0',
        '--config',
        suite.configFile,
        '--claims',
        claims,
        '--out',
        join(suite.work.path, 'out-no-prom'),
      ],
      { NODE_OPTIONS: `--import=${hook}` },
    );
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      'error: hotload-claim-reconciler: --metrics-port was given but the optional peer dependency prom-client is not installed (npm install prom-client)',
    );
  });
});
