import { dirname, resolve } from 'node:path';
import { parseDsn } from './dsn.js';
import { SourceError } from './errors.js';
import { type FileSourceOptions, FolderFileReads } from './file-reads.js';
import { normalizeParams } from './normalize.js';
import { readSourceText } from './read-file.js';
import { SnapshotSource } from './snapshot-source.js';
import type { ConnectionSource, SourceKind, SourceSnapshot } from './source.js';

/**
 * One file holding a whole DSN, libpq key/value (`host=db user=app ...`) or URI
 * (`postgres://app:pw@db:5432/app`), like Go hotload's fsnotify strategy. Surrounding
 * whitespace is ignored. The watcher watches the file's directory, so rename-over writes,
 * deletion and re-creation and `..data` swaps are all seen.
 */
export class DsnFileSource extends SnapshotSource implements ConnectionSource {
  /** Always `dsn-file`. */
  readonly kind: SourceKind = 'dsn-file';
  /** `dsn-file <absolute path>`: secret-free, for logs and metric labels. */
  readonly description: string;
  /** The file's directory (so rename-over writes, re-creation and `..data` swaps are seen). */
  readonly watchPaths: readonly string[];
  /** The DSN file's absolute path. */
  readonly file: string;
  readonly #reads: FolderFileReads;

  constructor(file: string, options: FileSourceOptions = {}) {
    super();
    this.#reads = new FolderFileReads(options.fileReads);
    this.file = resolve(file);
    this.watchPaths = [dirname(this.file)];
    this.description = `dsn-file ${this.file}`;
  }

  /** Reads and parses the file now; `changedAt` is its mtime (milliseconds since the epoch). */
  protected override async readNow(): Promise<SourceSnapshot> {
    const source = this.description;
    const file = this.file;
    const result = await readSourceText(file, file, source, undefined, await this.#reads.for(dirname(file)));
    if (result.kind === 'absent') {
      throw new SourceError({
        code: 'missing',
        source,
        file,
        errno: result.errno,
        problem: 'does not exist',
      });
    }
    if (result.kind === 'error') throw result.error;
    if (result.text.trim() === '')
      throw new SourceError({ code: 'empty', source, file, problem: 'the file is empty' });
    const parsed = parseDsn(result.text);
    if ('problem' in parsed)
      throw new SourceError({ code: 'malformed', source, file, problem: parsed.problem });
    const origins = Object.fromEntries(Object.keys(parsed.params).map((k) => [k, file]));
    const config = normalizeParams(
      { params: parsed.params, origins },
      { source, baseDir: dirname(file), defaultFile: file, missingHint: (key) => `the DSN gives no ${key}` },
    );
    if (config instanceof SourceError) throw config;
    return { config, changedAt: result.mtimeMs };
  }
}
