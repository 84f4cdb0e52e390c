/**
 * The identity of an output folder as a publisher: a random id kept in
 * `<out>/.hotload-publisher-id`, written once. The reconciler records it on each claim's
 * base role, so a second --out for the same claims is recognised and refused instead of
 * setting passwords the first folder does not publish.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performStep, type StepHook } from '../core/steps.js';

/** File name of the publisher id inside the output folder. */
export const PUBLISHER_ID_FILE = '.hotload-publisher-id';

/** What a dry run reports for a folder that has no id yet (none is written). */
const NOT_YET_WRITTEN = 'new-folder';

/**
 * Reads the folder's id, creating it on first use. Two processes creating it at once agree:
 * the id is written to a file of its own and linked into place, which fails for the second
 * (EEXIST), which then reads the first one's complete id.
 */
export async function folderPublisherId(outputDir: string, step: StepHook | undefined): Promise<string> {
  const path = join(outputDir, PUBLISHER_ID_FILE);
  const existing = await readId(path);
  if (existing) return existing;
  if (!(await performStep(step, { claim: outputDir, action: 'write-publisher-id' }))) return NOT_YET_WRITTEN;
  const id = `folder-${randomBytes(12).toString('hex')}`;
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await mkdir(outputDir, { recursive: true });
  await writeFile(temp, `${id}\n`, { mode: 0o600 });
  try {
    await link(temp, path);
    return id;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const winner = await readId(path);
    if (!winner) throw new Error(`${path}: exists but holds no publisher id`);
    return winner;
  } finally {
    await rm(temp, { force: true });
  }
}

async function readId(path: string): Promise<string | undefined> {
  try {
    const text = (await readFile(path, 'utf8')).trim();
    if (!/^[A-Za-z0-9_.:/-]{1,200}$/.test(text)) throw new Error(`${path}: not a publisher id`);
    return text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
