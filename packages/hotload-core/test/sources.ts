import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Writes plain files (no ..data layout) into `dir`. */
export async function writeFiles(dir: string, files: Record<string, string | Uint8Array>): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
}

/** Expects `promise` to reject with a SourceError and returns it. */
export async function sourceError(promise: Promise<unknown>): Promise<import('../src/index.js').SourceError> {
  try {
    await promise;
  } catch (error) {
    const { isSourceError } = await import('../src/index.js');
    if (isSourceError(error)) return error;
    throw error;
  }
  throw new Error('expected a SourceError, got a config');
}
