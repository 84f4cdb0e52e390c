/**
 * Checks made before the first SQL write of a pass, so that a mistake an operator can make
 * (a claims path that is a file, an `--out` that cannot be written, a wrong master
 * password) is found while nothing has changed yet.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { errorMessage } from '../core/error-message.js';
import { type InstanceTarget, instanceId } from '../core/instance-target.js';
import { tryLogin } from '../core/pg-connection.js';
import { readMasterPassword } from '../core/reconciler-config.js';

/** A usage or setup problem found before anything was changed (the CLI exits 2). */
export class PreflightError extends Error {
  override readonly name = 'PreflightError';
}

/** `--claims` must be an existing folder. */
export async function checkClaimsFolder(dir: string): Promise<void> {
  const info = await stat(dir).catch((error: NodeJS.ErrnoException) => {
    throw new PreflightError(`--claims ${dir}: cannot read (${error.code})`);
  });
  if (!info.isDirectory())
    throw new PreflightError(`--claims ${dir}: not a folder (give the folder that holds the claim files)`);
}

/**
 * `--out` must be a folder this process can write (created if missing). Proven by writing
 * and removing a probe file, since permission bits say nothing to root or on a read-only
 * mount. A dry run only checks, creating and writing nothing.
 */
export async function checkOutputFolder(dir: string, dryRun: boolean): Promise<void> {
  const info = await stat(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw new PreflightError(`--out ${dir}: cannot use (${error.code})`);
  });
  if (info && !info.isDirectory()) throw new PreflightError(`--out ${dir}: not a folder`);
  if (dryRun) {
    await access(info ? dir : await nearestExisting(dir), constants.W_OK | constants.X_OK).catch(
      (error: NodeJS.ErrnoException) => {
        throw new PreflightError(`--out ${dir}: not writable (${error.code})`);
      },
    );
    return;
  }
  const probe = join(dir, `.hotload-preflight-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(probe, '');
  } catch (error) {
    throw new PreflightError(
      `--out ${dir}: not writable (${(error as NodeJS.ErrnoException).code ?? errorMessage(error)})`,
    );
  } finally {
    await rm(probe, { force: true });
  }
}

async function nearestExisting(dir: string): Promise<string> {
  for (let current = dirname(dir); ; current = dirname(current)) {
    const info = await stat(current).catch(() => undefined);
    if (info) {
      if (!info.isDirectory()) throw new PreflightError(`--out ${dir}: ${current} is not a folder`);
      return current;
    }
    if (dirname(current) === current) return current;
  }
}

/**
 * Logs in to every target with its own fragment key's user and password, even where two
 * keys share a user and host (each key's password file is checked, so a wrong one cannot
 * hide behind another key's working login). Resolves an error per failing target key
 * ({@link targetKey}); messages name the fragment key, host and user, never a password.
 */
export async function checkMasterLogins(targets: readonly InstanceTarget[]): Promise<Map<string, string>> {
  const unique = new Map(targets.map((target) => [targetKey(target), target]));
  const failures = new Map<string, string>();
  await Promise.all(
    [...unique].map(async ([key, target]) => {
      const { fragment } = target;
      const where = `fragment key ${target.label} (${fragment.username}@${instanceId(target)})`;
      let password: string;
      try {
        password = await readMasterPassword(fragment);
      } catch (error) {
        failures.set(key, `${where}: ${errorMessage(error)}`);
        return;
      }
      const login = await tryLogin({
        host: target.host,
        port: target.port,
        user: fragment.username,
        password,
        database: 'postgres',
        sslmode: fragment.sslmode,
        sslrootcert: fragment.sslrootcert,
      });
      if (!login.ok) failures.set(key, `${where}: cannot log in as master: ${login.reason}`);
    }),
  );
  return failures;
}

/** Identity of a master login target: its fragment key and the instance it reaches. */
export function targetKey(target: InstanceTarget): string {
  return `${target.label}|${instanceId(target)}`;
}
