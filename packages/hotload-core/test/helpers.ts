import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh temp folder per test; remove with the returned cleanup. */
export async function tempDir(
  prefix = 'hotload-core-',
): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
