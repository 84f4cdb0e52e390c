import { isAbsolute, join, resolve } from 'node:path';
import { DATA_DIR_NAME } from './atomic-writer.js';
import { parseDsn } from './dsn.js';
import { fsSourceError, SourceError } from './errors.js';
import { type FileReads, type FileSourceOptions, FolderFileReads } from './file-reads.js';
import { normalizeParams, type RawParams } from './normalize.js';
import { FILE_KEYWORDS, LIBPQ_KEYWORDS, SECRET_KEYWORDS } from './params.js';
import { readSourceText } from './read-file.js';
import { SnapshotSource } from './snapshot-source.js';
import type { ConnectionSource, SourceKind, SourceSnapshot } from './source.js';

/** The DSN keys, highest precedence first: the first one present is the base. */
export const DSN_KEYS = ['uri_dsn.txt', 'dsn.txt'] as const;

/**
 * Per-key file name → libpq keyword. The database controller's names come first, the
 * libpq names after them: when both exist, the libpq name (`host`, `user`, `dbname`) wins.
 * Any other file named like a libpq keyword (`application_name`, `sslrootcert` ...) is
 * read as that keyword. cert-manager's `tls.crt`, `tls.key`, `ca.crt` name `sslcert`,
 * `sslkey`, `sslrootcert` (see {@link CERT_MANAGER_FILES}). Other files (`ro_uri_dsn.txt` ...) are ignored.
 */
export const KEY_FILE_ALIASES: ReadonlyArray<readonly [file: string, keyword: string]> = [
  ['hostname', 'host'],
  ['username', 'user'],
  ['database', 'dbname'],
];

/**
 * cert-manager's Secret layout (`kubernetes.io/tls`: `tls.crt`, `tls.key`, `ca.crt`) →
 * the libpq keywords naming those files. Used when present and the directory (file or
 * DSN) does not name that keyword itself.
 */
export const CERT_MANAGER_FILES: ReadonlyArray<readonly [file: string, keyword: string]> = [
  ['tls.crt', 'sslcert'],
  ['tls.key', 'sslkey'],
  ['ca.crt', 'sslrootcert'],
];

const MAX_SNAPSHOT_ATTEMPTS = 5;

/** Thrown inside a read when a `..data` swap happened mid-read: the read starts over. */
class SwappedWhileReading extends Error {}

interface DirectoryRead extends RawParams {
  readonly mtimeMs: number;
  /** Read through `..data`: one version the writer published whole. */
  readonly atomic: boolean;
}

/**
 * Reads one directory of per-key files into raw libpq parameters.
 *
 * Consistency: when the directory is a Kubernetes volume (`..data` symlink), every file
 * is read from the one timestamped folder `..data` pointed at when the read began, and
 * the read starts over if `..data` moved meanwhile, so a read never mixes two versions.
 *
 * Precedence inside a directory: the DSN (`uri_dsn.txt`, else `dsn.txt`) gives the base;
 * each per-key file present overrides its field. Both DSN files are parsed when present
 * (a broken one is an error even when the other is fine).
 *
 * Whitespace: values are trimmed, except secrets (`password`, `sslpassword` ...), which
 * lose only their trailing line breaks (`\n`, `\r\n`), as written by `echo` or an editor;
 * a password may begin or end with spaces. A file that is then empty is an `empty` error.
 */
export async function readDirectoryParams(
  dir: string,
  source: string,
  reads: FileReads,
): Promise<DirectoryRead> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await readDirectoryOnce(dir, source, reads);
    } catch (error) {
      if (!(error instanceof SwappedWhileReading)) throw error;
      if (attempt >= MAX_SNAPSHOT_ATTEMPTS) {
        throw new SourceError({
          code: 'unreadable',
          source,
          file: dir,
          problem: 'kept changing while being read',
        });
      }
    }
  }
}

async function currentDataTarget(dir: string, reads: FileReads): Promise<string | undefined> {
  try {
    return await reads.readlink(join(dir, DATA_DIR_NAME));
  } catch {
    return undefined; // no ..data (EINVAL: not a symlink; ENOENT: a plain directory)
  }
}

/** mtime of the `..data` link itself (0 if it is gone: the end-of-read check then restarts). */
async function dataLinkMtime(dir: string, reads: FileReads): Promise<number> {
  try {
    return (await reads.lstat(join(dir, DATA_DIR_NAME))).mtimeMs;
  } catch {
    return 0;
  }
}

async function readDirectoryOnce(dir: string, source: string, reads: FileReads): Promise<DirectoryRead> {
  const dataTarget = await currentDataTarget(dir, reads);
  const snapshotDir =
    dataTarget === undefined ? dir : isAbsolute(dataTarget) ? dataTarget : resolve(dir, dataTarget);
  let names: Set<string>;
  try {
    names = new Set(await reads.readdir(snapshotDir));
  } catch (error) {
    if (dataTarget !== undefined) throw new SwappedWhileReading();
    throw fsSourceError(source, dir, error);
  }

  // Every candidate file present is read at once (read async, the thread pool reads them
  // in parallel), then the values are combined in precedence order.
  const wanted: [name: string, keyword: string][] = [
    ...DSN_KEYS.map((name) => [name, 'dsn'] as [string, string]),
    ...KEY_FILE_ALIASES.map(([file, keyword]) => [file, keyword] as [string, string]),
    ...[...LIBPQ_KEYWORDS].map((keyword) => [keyword, keyword] as [string, string]),
  ].filter(([name]) => names.has(name));
  // A kubelet volume's version became visible at its `..data` swap, which comes after its
  // files were written (and synced): when the change happened for a reader, so the time
  // from which detection and switch latency count. Read beside the files (one wait
  // fewer on a busy event loop): a swap meanwhile fails the end-of-read check below.
  const [results, linkMtimeMs] = await Promise.all([
    Promise.all(
      wanted.map(([name, keyword]) =>
        readSourceText(join(snapshotDir, name), join(dir, name), source, keyword, reads),
      ),
    ),
    dataTarget === undefined ? 0 : dataLinkMtime(dir, reads),
  ]);
  let mtimeMs = linkMtimeMs;
  const values = new Map<string, string>();
  for (const [i, [name, keyword]] of wanted.entries()) {
    const result = results[i]!;
    if (result.kind === 'absent') {
      if (dataTarget !== undefined) throw new SwappedWhileReading();
      continue; // deleted since readdir: as if it had not been there
    }
    if (result.kind === 'error') throw result.error;
    mtimeMs = Math.max(mtimeMs, result.mtimeMs);
    const value = SECRET_KEYWORDS.has(keyword) ? result.text.replace(/[\r\n]+$/, '') : result.text.trim();
    if (value.trim() === '') {
      throw new SourceError({
        code: 'empty',
        source,
        file: join(dir, name),
        key: keyword,
        problem: 'the file is empty',
      });
    }
    values.set(name, value);
  }

  const params: Record<string, string> = {};
  const origins: Record<string, string> = {};
  // DSN base: parse both, use the first present in DSN_KEYS order.
  let base: { file: string; params: Record<string, string> } | undefined;
  for (const name of DSN_KEYS) {
    const text = values.get(name);
    if (text === undefined) continue;
    const parsed = parseDsn(text);
    const file = join(dir, name);
    if ('problem' in parsed)
      throw new SourceError({ code: 'malformed', source, file, problem: parsed.problem });
    base ??= { file, params: parsed.params };
  }
  if (base) {
    for (const [key, value] of Object.entries(base.params)) {
      params[key] = value;
      origins[key] = base.file;
    }
  }
  // Per-key files override: controller aliases come first in `wanted`, so libpq names win.
  for (const [name, keyword] of wanted) {
    const value = values.get(name);
    if (value === undefined || keyword === 'dsn') continue;
    params[keyword] = value;
    origins[keyword] = join(dir, name);
  }

  for (const [name, keyword] of CERT_MANAGER_FILES) {
    if (!names.has(name) || params[keyword] !== undefined) continue;
    params[keyword] = join(snapshotDir, name);
    origins[keyword] = join(dir, name);
  }
  if (dataTarget !== undefined) pinFilesToSnapshot(params, snapshotDir);

  if (dataTarget !== undefined && (await currentDataTarget(dir, reads)) !== dataTarget)
    throw new SwappedWhileReading();
  return { params, origins, mtimeMs, atomic: dataTarget !== undefined };
}

/**
 * In a kubelet volume, relative file parameters (`sslrootcert=ca.crt`) name the file in
 * the timestamped folder this read came from, not through `..data`: a rotated
 * certificate then changes the path, so the config (and its fingerprint) changes and the
 * rotation goes through verify → switch → drain; and the files the generation reads
 * when it is built are the version its other keys came from (a certificate never paired
 * with the previous version's key).
 */
function pinFilesToSnapshot(params: Record<string, string>, snapshotDir: string): void {
  for (const keyword of FILE_KEYWORDS) {
    const value = params[keyword];
    if (value !== undefined && !isAbsolute(value)) params[keyword] = resolve(snapshotDir, value);
  }
}

const missingHint = (key: 'host' | 'user' | 'dbname') =>
  ({
    host: 'no hostname or host file, and no host in uri_dsn.txt or dsn.txt',
    user: 'no username or user file, and no user in uri_dsn.txt or dsn.txt',
    dbname: 'no database or dbname file, and no dbname in uri_dsn.txt or dsn.txt',
  })[key];

/**
 * Directories of per-key files, merged: later directories override earlier ones, key by
 * key (a DSN in a later directory overrides every key it contains). Each directory is
 * read as described for `readDirectoryParams`; the required fields are checked on
 * the merged result, so host/port may come from one mount and user/password from another.
 * Every directory must exist.
 */
export class MergedDirectoriesSource extends SnapshotSource implements ConnectionSource {
  /** Always `merged-directories`. */
  readonly kind: SourceKind = 'merged-directories';
  /** `merged-directories <dir> + <dir> ...` (absolute paths): secret-free, for logs and metric labels. */
  readonly description: string;
  /** The directories themselves. */
  readonly watchPaths: readonly string[];
  /** The directories' absolute paths, lowest precedence first. */
  readonly directories: readonly string[];
  readonly #reads: FolderFileReads;

  constructor(directories: readonly string[], options: FileSourceOptions = {}) {
    super();
    this.#reads = new FolderFileReads(options.fileReads);
    if (directories.length === 0) throw new TypeError('MergedDirectoriesSource needs at least one directory');
    this.directories = Object.freeze(directories.map((d) => resolve(d)));
    this.watchPaths = this.directories;
    this.description = `merged-directories ${this.directories.join(' + ')}`;
  }

  /** Reads every directory (each through one `..data` snapshot) and validates the merged keys, now. */
  protected override async readNow(): Promise<SourceSnapshot> {
    const params: Record<string, string> = {};
    const origins: Record<string, string> = {};
    let mtimeMs = 0;
    let atomic = true;
    for (const dir of this.directories) {
      const one = await readDirectoryParams(dir, this.description, await this.#reads.for(dir));
      Object.assign(params, one.params);
      Object.assign(origins, one.origins);
      mtimeMs = Math.max(mtimeMs, one.mtimeMs);
      atomic &&= one.atomic;
    }
    const last = this.directories[this.directories.length - 1]!;
    const config = normalizeParams(
      { params, origins },
      { source: this.description, baseDir: last, defaultFile: last, missingHint },
    );
    if (config instanceof SourceError) throw config;
    // Several directories are a combination of versions that two writers may be changing a
    // moment apart: only a single one is a whole version (see SourceSnapshot.atomic).
    return { config, changedAt: mtimeMs || Date.now(), atomic: atomic && this.directories.length === 1 };
  }
}

/**
 * A Kubernetes Secret (or ConfigMap) volume, or any directory of per-key files, with the
 * database controller's key names: `hostname`/`host`, `port`, `username`/`user`,
 * `password`, `database`/`dbname`, `sslmode`, `dsn.txt`, `uri_dsn.txt`, and files named
 * after other libpq keywords. See `readDirectoryParams` for precedence and
 * whitespace rules.
 */
export class SecretDirectorySource extends SnapshotSource implements ConnectionSource {
  /** Always `secret-directory`. */
  readonly kind: SourceKind = 'secret-directory';
  /** `secret-directory <absolute path>`: secret-free, for logs and metric labels. */
  readonly description: string;
  /** The directory itself. */
  readonly watchPaths: readonly string[];
  /** The directory's absolute path. */
  readonly directory: string;
  readonly #merged: MergedDirectoriesSource;

  constructor(directory: string, options: FileSourceOptions = {}) {
    super();
    this.directory = resolve(directory);
    this.watchPaths = [this.directory];
    this.description = `secret-directory ${this.directory}`;
    this.#merged = new MergedDirectoriesSource([this.directory], options);
  }

  /**
   * Reads the directory (through one `..data` snapshot when it is a Kubernetes volume) and
   * validates it, now.
   */
  protected override readNow(): Promise<SourceSnapshot> {
    return this.#merged.readSnapshot();
  }
}
