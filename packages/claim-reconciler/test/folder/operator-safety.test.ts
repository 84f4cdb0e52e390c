/**
 * What an operator can get wrong, through the real CLI against a real PostgreSQL: a claims
 * folder that is empty or partial never deletes without --prune, --prune refuses above its
 * limit, --dry-run changes nothing (checked in the server's statement log), and a bad
 * --claims or --out is found before the first SQL write (exit 2).
 */
import { mkdir, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { canLogin, claimYaml, rolesLike, useReconcilerCluster } from 'hotload-test-support/claims';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseClaims, Reconciler, type StepHook } from '../../src/index.js';
import { type CliRun, runCli } from './cli-runner.js';

const suite = useReconcilerCluster();

beforeAll(async () => {
  // Every DDL statement (CREATE/ALTER/DROP/GRANT/COMMENT) goes to the server log.
  await suite.cluster.query("ALTER SYSTEM SET log_statement = 'ddl'");
  await suite.cluster.query('SELECT pg_reload_conf()');
});

afterAll(async () => {
  await suite.cluster.query('ALTER SYSTEM RESET log_statement').catch(() => {});
});

/** The DDL statements the server logged while `work` ran. */
async function ddlDuring<T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const log = join(suite.cluster.runDir, 'server.log');
  const before = (await stat(log)).size;
  const result = await work();
  const text = (await readFile(log)).subarray(before).toString('utf8');
  return { result, statements: text.split('\n').filter((line) => line.includes('statement: ')) };
}

async function folderWith(name: string, files: Record<string, string>): Promise<string> {
  const dir = join(suite.work.path, name);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
  return dir;
}

const claimFile = (name: string) =>
  claimYaml(name.replace(/_/g, '-'), {
    databaseName: name,
    instanceLabel: 'atlas',
    userName: name,
    deletionPolicy: 'Delete',
  });

function reconcile(claims: string, out: string, ...flags: string[]): Promise<CliRun> {
  return runCli(['reconcile', '--config', suite.configFile, '--claims', claims, '--out', out, ...flags]);
}

async function databaseExists(name: string): Promise<boolean> {
  const { rows } = await suite.cluster.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  return rows.length === 1;
}

/** What a secret folder publishes now: the `..data` target and the password. */
async function published(out: string, name: string): Promise<{ data: string; password: string }> {
  const dir = join(out, 'default', name.replace(/_/g, '-'));
  return {
    data: await readlink(join(dir, '..data')),
    password: await readFile(join(dir, 'password'), 'utf8'),
  };
}

/** Claims `<prefix>_a` and `<prefix>_b` reconciled into `out-<prefix>`, and what each publishes. */
async function twoPublishedClaims(prefix: string) {
  const out = join(suite.work.path, `out-${prefix}`);
  const both = await folderWith(`claims-${prefix}`, {
    'a.yaml': claimFile(`${prefix}_a`),
    'b.yaml': claimFile(`${prefix}_b`),
  });
  expect((await reconcile(both, out)).code).toBe(0);
  const before = { a: await published(out, `${prefix}_a`), b: await published(out, `${prefix}_b`) };
  return { out, before };
}

describe('deletion needs an explicit signal', () => {
  it('an empty claims folder deletes nothing; --prune over the limit refuses; --prune within it deletes', async () => {
    const { out, before } = await twoPublishedClaims('prune');

    // The most common mistake: a claims folder that is there but empty.
    const empty = await folderWith('claims-prune-empty', {});
    const { result: kept, statements } = await ddlDuring(() => reconcile(empty, out, '--json'));
    expect(kept.code).toBe(0);
    expect(JSON.parse(kept.stdout).outcomes).toMatchObject([
      { claim: 'default/prune-a', result: 'not-pruned' },
      { claim: 'default/prune-b', result: 'not-pruned' },
    ]);
    expect(statements).toEqual([]);
    expect(await published(out, 'prune_a')).toEqual(before.a);
    expect(await published(out, 'prune_b')).toEqual(before.b);

    // --prune with the empty folder would delete 2 > 1: refused, nothing deleted, exit 1.
    const refused = await ddlDuring(() => reconcile(empty, out, '--prune'));
    expect(refused.result.code).toBe(1);
    expect(refused.result.stdout).toContain(
      '✗ default/prune-a: not-pruned (refused: this pass would delete 2 claims, more than the limit of 1 (--max-deletions); nothing was deleted)',
    );
    expect(refused.statements).toEqual([]);
    expect(await databaseExists('prune_a')).toBe(true);
    expect(await published(out, 'prune_b')).toEqual(before.b);

    // One claim removed on purpose, with --prune: that one (and only that one) goes.
    const onlyA = await folderWith('claims-prune-a', { 'a.yaml': claimFile('prune_a') });
    const pruned = await reconcile(onlyA, out, '--prune');
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toMatch(/✓ default\/prune-b: deleted \(removed secret; dropped database/);
    expect(await databaseExists('prune_b')).toBe(false);
    expect(await rolesLike(suite.cluster, 'prune_b')).toEqual([]);
    expect(await published(out, 'prune_a')).toEqual(before.a);
  });

  it('--rotate --claims <subset> rotates the subset and touches no other claim', async () => {
    const { out, before } = await twoPublishedClaims('subset');
    const onlyA = await folderWith('claims-subset-a', { 'a.yaml': claimFile('subset_a') });

    const { result: run, statements } = await ddlDuring(() => reconcile(onlyA, out, '--rotate'));

    expect(run.code).toBe(0);
    expect(run.stdout).toContain('! default/subset-b: not-pruned');
    expect((await published(out, 'subset_a')).password).not.toBe(before.a.password);
    expect(await published(out, 'subset_b')).toEqual(before.b);
    expect(await canLogin(suite.cluster, 'subset_b_a', before.b.password, 'subset_b')).toBe(true);
    expect(statements.filter((line) => line.includes('subset_b'))).toEqual([]);
  });
});

describe('a renamed claim keeping its secret name', () => {
  it('--prune does not remove the secret the new claim now publishes', async () => {
    const outputDir = join(suite.work.path, 'out-renamed');
    const reconciler = new Reconciler({ config: suite.config, outputDir });
    const parse = (name: string, instanceLabel: string) =>
      parseClaims(
        claimYaml(name, {
          databaseName: 'renamed',
          userName: 'renamed',
          instanceLabel,
          secretName: 'shared',
        }),
        `${name}.yaml`,
      ).claims;
    // The old claim never provisioned (its label matched nothing): a status with no binding.
    expect((await reconciler.reconcile(parse('old-name', 'nowhere'))).outcomes).toMatchObject([
      { result: 'error' },
    ]);
    const result = await reconciler.reconcile(parse('new-name', 'atlas'), { prune: true });
    expect(result.outcomes).toMatchObject([
      { claim: 'default/new-name', result: 'created' },
      { claim: 'default/old-name', result: 'deleted', actions: [] },
    ]);
    const user = await readFile(join(outputDir, 'default', 'shared', 'username'), 'utf8');
    const password = await readFile(join(outputDir, 'default', 'shared', 'password'), 'utf8');
    expect(await canLogin(suite.cluster, user, password, 'renamed')).toBe(true);
  });
});

describe('--dry-run', () => {
  it('prints every step of a first provisioning, takes none (no DDL, no folder), and lists what the real run does', async () => {
    const out = join(suite.work.path, 'out-dry');
    const claims = await folderWith('claims-dry', { 'a.yaml': claimFile('dry_a') });
    const { result: dry, statements } = await ddlDuring(() => reconcile(claims, out, '--dry-run'));
    expect(dry.code).toBe(0);
    expect(statements).toEqual([]);
    expect(await readdir(out).catch(() => 'absent')).toBe('absent');
    expect(await databaseExists('dry_a')).toBe(false);
    const printed = dry.stdout.split('\n').filter((line) => line.startsWith('would '));
    expect(printed).toEqual([
      `would write-publisher-id (${out})`,
      'would create-role dry_a (default/dry-a)',
      'would create-database dry_a (default/dry-a)',
      'would create-role dry_a_a (default/dry-a)',
      'would set-session-role dry_a_a (default/dry-a)',
      'would create-role dry_a_b (default/dry-a)',
      'would set-session-role dry_a_b (default/dry-a)',
      'would set-password dry_a_a (default/dry-a)',
      'would publish-secret (default/dry-a)',
      'would write-status (default/dry-a)',
    ]);
    expect(dry.stdout).toContain('dry run: nothing was changed');
  });

  it('announces the same steps as the real run (library, step hook), for provisioning, rotation and deletion', async () => {
    const outputDir = join(suite.work.path, 'out-dry-diff');
    const { claims } = parseClaims(claimFile('drydiff'), 'drydiff.yaml');
    const reconciler = (onStep: StepHook) => new Reconciler({ config: suite.config, outputDir, onStep });
    const steps = async (pass: Parameters<Reconciler['reconcile']>, dry: boolean) => {
      const seen: string[] = [];
      await reconciler((step) => {
        // A skipped publish or status write has no inner steps (the writer's, the rename).
        if (!step.action.startsWith('publish-secret:') && step.action !== 'rename-status')
          seen.push(step.action);
        return dry ? 'skip' : undefined;
      }).reconcile(...pass);
      return seen;
    };
    for (const pass of [[claims], [claims, { rotate: true }], [[], { prune: true }]] as const) {
      const args = pass as unknown as Parameters<Reconciler['reconcile']>;
      const planned = await steps(args, true);
      expect(planned.length).toBeGreaterThan(0);
      expect(await steps(args, false)).toEqual(planned);
    }
    expect(await databaseExists('drydiff')).toBe(false);
  });
});

describe('pre-flight', () => {
  it('a bad --out or --claims exits 2 before any SQL, naming the path', async () => {
    const claims = await folderWith('claims-preflight', { 'a.yaml': claimFile('preflight_a') });
    const file = join(suite.work.path, 'not-a-folder');
    await writeFile(file, 'x');
    for (const [args, message] of [
      [[claims, file], `--out ${file}: not a folder`],
      [[claims, join(file, 'below')], `--out ${join(file, 'below')}: cannot use (ENOTDIR)`],
      [[join(claims, 'a.yaml'), join(suite.work.path, 'out-pf')], 'not a folder'],
      [[join(suite.work.path, 'no-such'), join(suite.work.path, 'out-pf')], 'cannot read (ENOENT)'],
    ] as const) {
      const { result, statements } = await ddlDuring(() => reconcile(args[0], args[1]));
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
      expect(statements).toEqual([]);
    }
    expect(await rolesLike(suite.cluster, 'preflight_a')).toEqual([]);
  });
});
