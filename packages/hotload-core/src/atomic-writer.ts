import { Buffer } from 'node:buffer';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';

/** The symlink that points at the current timestamped folder, as the kubelet names it. */
export const DATA_DIR_NAME = '..data';
const NEW_DATA_DIR_NAME = '..data_tmp';
const MAX_FILE_NAME_LENGTH = 255;
const MAX_PATH_LENGTH = 4096;

/** One file of a payload: its content and, optionally, its own mode. */
export interface SecretFile {
  /** The file's content (a string is written as UTF-8). */
  data: string | Uint8Array;
  /** The file's mode (e.g. `0o640`); defaults to the writer's `fileMode` (0o600 unless set). */
  mode?: number;
}

/** Key → content. Keys are relative paths; a key with `/` makes a sub-folder. */
export type SecretPayload = Readonly<Record<string, string | Buffer | Uint8Array | SecretFile>>;

/** What {@link writeSecretAtomically} did. */
export interface AtomicWriteResult {
  /** False when the payload equals what is there already: nothing was touched. */
  changed: boolean;
  /** The timestamped folder `..data` points at after the write (its base name). */
  dataDir: string | undefined;
  /**
   * When `..data` was renamed into place: ms since epoch, sub-millisecond precision
   * (`performance.timeOrigin + performance.now()`). Undefined when nothing changed.
   */
  swappedAt: number | undefined;
}

/**
 * A step inside one write, announced before it happens (crash tests kill the process at
 * each): `write-files` (into the new timestamped folder), `swap-data` (the `..data`
 * rename), `remove-old` (removing dropped keys and the previous folder).
 */
export type AtomicWriteStep = 'write-files' | 'swap-data' | 'remove-old';

/** Options of one {@link AtomicSecretWriter.write}. */
export interface AtomicWriteOptions {
  /** Called before each {@link AtomicWriteStep}; may be async. */
  onStep?: (step: AtomicWriteStep) => void | Promise<void>;
}

/** Options of {@link writeSecretAtomically}. */
export interface AtomicSecretWriterOptions {
  /** Mode for files whose entry gives none. Default 0o600 (secrets readable by their owner only). */
  fileMode?: number;
  /** Clock for the timestamped folder names (tests). */
  now?: () => Date;
}

/**
 * Writes a set of files into a directory exactly the way the kubelet updates a Secret or
 * ConfigMap volume (`pkg/volume/util/atomic_writer.go`), so that a reader never sees a
 * mix of old and new files:
 *
 * 1. validate the payload paths (relative, no `..` element, not starting with `..`);
 * 2. read where `..data` points; if every payload file already has the same content and
 *    no file has to go, stop: nothing changes (no event for the watcher);
 * 3. write the payload into a new folder `..YYYY_MM_DD_HH_MM_SS.<random>` (mode 0755);
 * 4. create the user-visible symlinks `key -> ..data/key` that do not exist yet;
 * 5. create `..data_tmp -> <new folder>` and rename it over `..data` (the atomic step);
 * 6. remove the user-visible symlinks of keys no longer in the payload;
 * 7. remove the old timestamped folder.
 *
 * A process killed between (3) and (7) leaves a timestamped folder that `..data` does not
 * point to: half written, or a whole copy of the previous secret whose credentials may
 * still work. Like the kubelet, every write first sweeps such folders (and a leftover
 * `..data_tmp`); {@link AtomicSecretWriter.sweep} does it on demand, e.g. when a writer starts.
 *
 * Writes through one instance are serialized. Different instances (or processes) writing
 * the same directory are not coordinated, exactly as with the kubelet: a sweep removes
 * another writer's folder in progress, so callers keep one writer per directory at a
 * time (the claim reconciler holds a per-claim lock).
 */
export class AtomicSecretWriter {
  /**
   * The directory written, as given (it holds `..data`, the timestamped folders and the
   * per-key symlinks).
   */
  readonly targetDir: string;
  private readonly defaultMode: number;
  private readonly now: () => Date;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(targetDir: string, options: AtomicSecretWriterOptions = {}) {
    this.targetDir = targetDir;
    this.defaultMode = options.fileMode ?? 0o600;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Publishes `payload` atomically; the directory is created if needed. Resolves when the
   * swap is done, telling whether anything changed. Errors name paths, never contents.
   */
  write(payload: SecretPayload, options: AtomicWriteOptions = {}): Promise<AtomicWriteResult> {
    const run = this.queue.then(
      () => this.writeNow(payload, options),
      () => this.writeNow(payload, options),
    );
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Reads the current payload (key → content) through `..data`; `{}` when there is none. */
  async read(): Promise<Record<string, Buffer>> {
    const current = await this.currentDataDir();
    if (!current) return {};
    const root = join(this.targetDir, current);
    const rels = await listFiles(root);
    const contents = await Promise.all(rels.map((rel) => readFile(join(root, rel))));
    return Object.fromEntries(rels.map((rel, i) => [rel, contents[i]!]));
  }

  /** The base name of the folder `..data` points at, or undefined. */
  async currentDataDir(): Promise<string | undefined> {
    try {
      return await readlink(join(this.targetDir, DATA_DIR_NAME));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /**
   * Removes timestamped folders that `..data` does not point to and a leftover
   * `..data_tmp`: what a writer killed mid-write leaves. Resolves the names removed.
   * Serialized with writes through this instance.
   */
  sweep(): Promise<string[]> {
    const run = this.queue.then(
      () => this.sweepNow(),
      () => this.sweepNow(),
    );
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Names {@link AtomicSecretWriter.sweep} would remove now: timestamped folders `..data`
   * does not point to.
   */
  async staleEntries(): Promise<string[]> {
    let entries: string[];
    try {
      entries = await readdir(this.targetDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const current = await this.currentDataDir();
    return entries.filter((name) => name.startsWith('..') && name !== DATA_DIR_NAME && name !== current);
  }

  /** The user-visible symlink `top -> ..data/top`, made when missing. */
  private async ensureVisibleLink(top: string): Promise<void> {
    const visible = join(this.targetDir, top);
    try {
      await readlink(visible);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      await symlink(join(DATA_DIR_NAME, top), visible);
    }
  }

  private async sweepNow(): Promise<string[]> {
    const stale = await this.staleEntries();
    for (const name of stale) await rm(join(this.targetDir, name), { recursive: true, force: true });
    return stale;
  }

  private async writeNow(payload: SecretPayload, options: AtomicWriteOptions): Promise<AtomicWriteResult> {
    const step = async (name: AtomicWriteStep) => {
      await options.onStep?.(name);
    };
    // (1)
    const clean = validatePayload(payload, this.defaultMode);
    await mkdir(this.targetDir, { recursive: true });
    await this.sweepNow();

    // (2)
    const dataDirPath = join(this.targetDir, DATA_DIR_NAME);
    const oldTsDir = await this.currentDataDir();
    const oldTsPath = oldTsDir ? join(this.targetDir, oldTsDir) : undefined;
    let pathsToRemove: string[] = [];
    if (oldTsPath) {
      const oldPaths = await listAllPaths(oldTsPath);
      const newPaths = new Set<string>();
      for (const file of clean.keys()) {
        for (let sub = file; sub !== '' && sub !== '.'; sub = dirname(sub)) newPaths.add(sub);
      }
      pathsToRemove = oldPaths.filter((p) => !newPaths.has(p));
      if (pathsToRemove.length === 0 && !(await differs(clean, oldTsPath))) {
        return { changed: false, dataDir: oldTsDir, swappedAt: undefined };
      }
    }

    // (3)
    await step('write-files');
    const tsDir = await mkdtemp(join(this.targetDir, timestampPrefix(this.now())));
    let swappedAt: number | undefined;
    await chmod(tsDir, 0o755);
    try {
      // The new folder is invisible until the swap, so its files need no order among
      // themselves: written at once, not one file's calls after another's (a claim's
      // publish was ~30 sequential file calls). Settled all before any error is thrown, so
      // the clean-up below never races a write still under way.
      await allSettledOrThrow([...clean].map(([rel, file]) => writeFileWithMode(tsDir, rel, file)));

      // (4) one symlink per top-level name (keys in one sub-folder share it)
      const tops = new Set([...clean.keys()].map((rel) => rel.split(sep)[0]!));
      await allSettledOrThrow([...tops].map((top) => this.ensureVisibleLink(top)));

      // (5)
      await step('swap-data');
      const newDataDirPath = join(this.targetDir, NEW_DATA_DIR_NAME);
      await rm(newDataDirPath, { force: true });
      await symlink(tsDir.slice(this.targetDir.length + 1), newDataDirPath);
      try {
        await rename(newDataDirPath, dataDirPath);
        swappedAt = performance.timeOrigin + performance.now();
      } catch (error) {
        await rm(newDataDirPath, { force: true });
        throw error;
      }
    } catch (error) {
      await rm(tsDir, { recursive: true, force: true });
      throw error;
    }

    // (6) only top-level entries are symlinks in the visible directory
    await step('remove-old');
    for (const p of pathsToRemove) {
      if (p.includes(sep)) continue;
      await rm(join(this.targetDir, p), { force: true });
    }

    // (7)
    if (oldTsPath) await rm(oldTsPath, { recursive: true, force: true });
    return { changed: true, dataDir: tsDir.slice(this.targetDir.length + 1), swappedAt };
  }
}

/** Writes one payload file under `dir` with exactly its mode (writeFile's mode passes through the umask). */
async function writeFileWithMode(dir: string, rel: string, file: CleanFile): Promise<void> {
  const full = join(dir, rel);
  if (rel.includes(sep)) await mkdir(dirname(full), { recursive: true });
  await writeFile(full, file.data, { mode: file.mode });
  await chmod(full, file.mode);
}

/** Waits for every one of `work`, then throws the first failure, if any. */
async function allSettledOrThrow(work: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((result) => result.status === 'rejected');
  if (failed) throw failed.reason;
}

/** One-shot form of {@link AtomicSecretWriter.write}. */
export function writeSecretAtomically(
  targetDir: string,
  payload: SecretPayload,
  options?: AtomicSecretWriterOptions,
): Promise<AtomicWriteResult> {
  return new AtomicSecretWriter(targetDir, options).write(payload);
}

interface CleanFile {
  data: Buffer;
  mode: number;
}

function validatePayload(payload: SecretPayload, defaultMode: number): Map<string, CleanFile> {
  const clean = new Map<string, CleanFile>();
  for (const [key, entry] of Object.entries(payload)) {
    validatePath(key);
    const normalized = key
      .split('/')
      .filter((part) => part !== '' && part !== '.')
      .join(sep);
    if (normalized === '') throw new Error('invalid payload path: must not be empty');
    const file: SecretFile =
      typeof entry === 'string' || entry instanceof Uint8Array ? { data: entry } : entry;
    const data = typeof file.data === 'string' ? Buffer.from(file.data, 'utf8') : Buffer.from(file.data);
    clean.set(normalized, { data, mode: file.mode ?? defaultMode });
  }
  // A key may not be both a file and a folder of another key.
  for (const key of clean.keys()) {
    for (let sub = dirname(key); sub !== '.'; sub = dirname(sub)) {
      if (clean.has(sub)) throw new Error('invalid payload: a path is both a file and a folder');
    }
  }
  return clean;
}

// Error messages name the path (a key name), never the content.
function validatePath(path: string): void {
  if (path === '') throw new Error('invalid payload path: must not be empty');
  if (path.startsWith('/')) throw new Error(`invalid payload path: must be relative: ${path}`);
  if (path.length > MAX_PATH_LENGTH) throw new Error(`invalid payload path: longer than ${MAX_PATH_LENGTH}`);
  const items = path.split('/');
  for (const item of items) {
    if (item === '..') throw new Error(`invalid payload path: must not contain '..': ${path}`);
    if (item.length > MAX_FILE_NAME_LENGTH) {
      throw new Error(`invalid payload path: file names must be at most ${MAX_FILE_NAME_LENGTH} characters`);
    }
    if (item.includes('\u0000')) throw new Error('invalid payload path: contains NUL');
  }
  if (items[0]!.startsWith('..')) throw new Error(`invalid payload path: must not start with '..': ${path}`);
}

async function differs(payload: Map<string, CleanFile>, oldTsPath: string): Promise<boolean> {
  // Read-only: every file compared at once.
  const results = await Promise.all(
    [...payload].map(([rel, file]) => fileDiffers(join(oldTsPath, rel), file)),
  );
  return results.some(Boolean);
}

async function fileDiffers(path: string, file: CleanFile): Promise<boolean> {
  let onDisk: Buffer;
  try {
    onDisk = await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw error;
  }
  if (!onDisk.equals(file.data)) return true;
  return ((await lstat(path)).mode & 0o7777) !== file.mode;
}

/** Every path (files and folders) under `root`, relative to it. */
async function listAllPaths(root: string): Promise<string[]> {
  try {
    const entries = await readdir(root, { recursive: true });
    return entries.map(String);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(root.length + 1))
    .sort();
}

function timestampPrefix(date: Date): string {
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return `..${date.getUTCFullYear()}_${pad(date.getUTCMonth() + 1)}_${pad(date.getUTCDate())}_${pad(
    date.getUTCHours(),
  )}_${pad(date.getUTCMinutes())}_${pad(date.getUTCSeconds())}.`;
}
