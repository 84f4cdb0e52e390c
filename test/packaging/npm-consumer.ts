/**
 * A fresh npm project outside the repository that installs the packed tarballs, as a user
 * of the published packages would: pnpm only packs (it rewrites `workspace:` ranges), npm
 * installs. The npm cache makes every run after the first one mostly offline.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { isolatedNodeEnv } from 'hotload-test-support';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const fixtures = fileURLToPath(new URL('./consumer/', import.meta.url));

/** The fields of a packed package.json the test reads. */
export interface PackedManifest {
  name: string;
  version: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  files?: string[];
}

/** One packed publishable package. */
export interface Tarball {
  readonly path: string;
  readonly manifest: PackedManifest;
  readonly files: readonly string[];
}

/** Standard output of a command; a failure's error carries what the command printed (tsc prints errors on stdout). */
export async function runIn(cwd: string, command: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(command, args, {
      cwd,
      env: isolatedNodeEnv(),
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${stdout}${stderr}`, { cause: error });
  }
}

/** Names of the packages under packages/ that are not private, sorted. */
export async function publishablePackageNames(): Promise<string[]> {
  const names: string[] = [];
  for (const dir of await readdir(join(repoRoot, 'packages'))) {
    const manifest = JSON.parse(await readFile(join(repoRoot, 'packages', dir, 'package.json'), 'utf8'));
    if (!manifest.private) names.push(manifest.name);
  }
  return names.sort();
}

/** `pnpm pack` of every package under packages/ (their `dist/` must be built). */
export async function packPublishable(destination: string): Promise<Tarball[]> {
  await runIn(repoRoot, process.execPath, [
    'scripts/pnpm.mjs',
    '--recursive',
    '--filter',
    './packages/*',
    'pack',
    '--pack-destination',
    destination,
  ]);
  const names = (await readdir(destination)).filter((name) => name.endsWith('.tgz'));
  return Promise.all(
    names.map(async (name) => {
      const path = join(destination, name);
      const manifest = JSON.parse(await runIn(destination, 'tar', ['-xOzf', path, 'package/package.json']));
      const files = (await runIn(destination, 'tar', ['-tzf', path])).split('\n').filter(Boolean);
      return { path, manifest, files: files.map((file) => file.replace(/^package\//, '')) };
    }),
  );
}

/**
 * The range a packed package accepts for `name`: its peer range, or the exact version it
 * depends on (a pinned dependency allows one version only).
 */
export function rangeFor(manifest: PackedManifest, name: string): string | undefined {
  return manifest.peerDependencies?.[name] ?? manifest.dependencies?.[name];
}

/** The lowest and the highest published 8.x version of `name` within `range`. */
export async function lowestAndHighest8x(name: string, range: string): Promise<[string, string]> {
  const out = await runIn(tmpdir(), 'npm', [
    'view',
    `${name}@${range}`,
    'version',
    '--json',
    '--prefer-offline',
  ]);
  const parsed: string | string[] = JSON.parse(out);
  const versions = (Array.isArray(parsed) ? parsed : [parsed])
    .filter((version) => /^8\.\d+\.\d+$/.test(version))
    .sort(compareVersions);
  const lowest = versions[0];
  const highest = versions.at(-1);
  if (!lowest || !highest) throw new Error(`no 8.x version of ${name} satisfies ${range}`);
  return [lowest, highest];
}

function compareVersions(a: string, b: string): number {
  const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
}

/** A temp folder with a minimal package.json and the fixture files (imports, tsconfig, .mts/.cts). */
export async function createConsumerProject(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'hotload-consumer-'));
  await mkdir(join(dir, 'tarballs'));
  await writeFile(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: 'hotload-consumer', version: '1.0.0', private: true }, null, 2)}\n`,
  );
  for (const file of await readdir(fixtures)) await copyFile(join(fixtures, file), join(dir, file));
  return dir;
}

/** `npm install` (never pnpm), preferring the cache; no audit, no funding notes. */
export async function npmInstall(dir: string, specs: string[]): Promise<void> {
  await runIn(dir, 'npm', [
    'install',
    '--prefer-offline',
    '--no-audit',
    '--no-fund',
    '--loglevel=error',
    ...specs,
  ]);
}

/** The version of TypeScript (and of @types/node) the repository itself pins. */
export async function repoDevVersion(name: string): Promise<string> {
  const manifest = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8'));
  return manifest.devDependencies[name];
}

/** Removes the consumer project. */
export async function removeProject(dir: string | undefined): Promise<void> {
  if (dir) await rm(dir, { recursive: true, force: true });
}
