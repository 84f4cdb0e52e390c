/**
 * The folder mode's status store: `<outputDir>/<namespace>/<secretName>.status.json` beside
 * each secret folder, written atomically (temp file + rename).
 */

import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { StatusStore } from '../core/claim-ports.js';
import type { ClaimStatus } from '../core/claim-status.js';
import { performStep, type StepHook } from '../core/steps.js';
import { storedMigration } from '../migration/migration-state.js';

/** Suffix of status files; secret names may not contain it. */
export const STATUS_SUFFIX = '.status.json';

/** Path of the status file of a secret. */
export function statusPath(outputDir: string, namespace: string, secretName: string): string {
  return join(outputDir, namespace, `${secretName}${STATUS_SUFFIX}`);
}

/** Reads a status file; undefined when missing or unreadable (it is re-derived then). */
export async function readStatus(path: string): Promise<ClaimStatus | undefined> {
  try {
    const value = JSON.parse(await readFile(path, 'utf8')) as ClaimStatus;
    return typeof value.claim === 'string' && typeof value.secretName === 'string'
      ? {
          ...value,
          retired: value.retired ?? [],
          deleting: value.deleting ?? false,
          ...(value.migration === undefined ? {} : { migration: storedMigration(value.migration) }),
        }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Writes `status` unless the file already holds exactly it (a re-run changes nothing).
 * Write-temp + rename keeps the file whole if the process dies mid-write. Returns whether
 * the file changed.
 */
export async function writeStatus(
  path: string,
  status: ClaimStatus,
  step: StepHook | undefined,
): Promise<boolean> {
  const text = `${JSON.stringify(status, null, 2)}\n`;
  const current = await readFile(path, 'utf8').catch(() => undefined);
  if (current === text) return false;
  // A name of its own per write: two reconcilers writing the same status never rename
  // each other's temp file away.
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  if (!(await performStep(step, { claim: status.claim, action: 'write-status' }))) return true;
  await mkdir(dirname(path), { recursive: true });
  await writeFile(temp, text, { mode: 0o600 });
  await step?.({ claim: status.claim, action: 'rename-status' });
  try {
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  return true;
}

/** Removes a status file (the last step of a deletion). */
export async function removeStatus(path: string, claim: string, step: StepHook | undefined): Promise<void> {
  if (await performStep(step, { claim, action: 'remove-status' })) await rm(path, { force: true });
}

/** Every status file under `outputDir` (`<namespace>/<secretName>.status.json`). */
export async function listStatuses(outputDir: string): Promise<Array<{ path: string; status: ClaimStatus }>> {
  const found: Array<{ path: string; status: ClaimStatus }> = [];
  const namespaces = await readdir(outputDir, { withFileTypes: true }).catch(() => []);
  for (const namespace of namespaces) {
    if (!namespace.isDirectory()) continue;
    const dir = join(outputDir, namespace.name);
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith(STATUS_SUFFIX)) continue;
      const path = join(dir, entry.name);
      const status = await readStatus(path);
      if (status) found.push({ path, status });
    }
  }
  return found;
}

/** {@link StatusStore} of the folder mode: status files beside the secret folders. */
export class FolderStatusStore implements StatusStore {
  constructor(
    /** The output folder: statuses are `<outputDir>/<namespace>/<secretName>.status.json`. */
    readonly outputDir: string,
  ) {}

  /** {@inheritDoc StatusStore.read} */
  read(namespace: string, secretName: string): Promise<ClaimStatus | undefined> {
    return readStatus(statusPath(this.outputDir, namespace, secretName));
  }

  /** {@inheritDoc StatusStore.write} */
  write(status: ClaimStatus, step: StepHook | undefined): Promise<boolean> {
    return writeStatus(statusPath(this.outputDir, status.namespace, status.secretName), status, step);
  }

  /** {@inheritDoc StatusStore.remove} */
  remove(status: ClaimStatus, step: StepHook | undefined): Promise<void> {
    return removeStatus(statusPath(this.outputDir, status.namespace, status.secretName), status.claim, step);
  }

  /** {@inheritDoc StatusStore.list} */
  async list(): Promise<ClaimStatus[]> {
    return (await listStatuses(this.outputDir)).map(({ status }) => status);
  }
}
