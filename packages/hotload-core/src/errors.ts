import { inspect } from 'node:util';

/**
 * What went wrong with a source.
 *
 * - `missing`: the directory or file does not exist (yet), or a dangling symlink.
 * - `unreadable`: it exists but cannot be read (permissions, a directory where a file was
 *   expected, an I/O error), or it is larger than the size limit.
 * - `empty`: a file that is present but holds nothing but whitespace.
 * - `malformed`: the content cannot be parsed (bad DSN syntax, unterminated quote, binary
 *   data or invalid UTF-8, an unknown parameter name ...).
 * - `incomplete`: it parses, but a required field (host, user or database) is missing.
 * - `invalid-value`: a field has a value that is not acceptable (a non-numeric or
 *   out-of-range port, an unknown sslmode, control characters in a host name ...).
 */
export type SourceErrorCode =
  | 'missing'
  | 'unreadable'
  | 'empty'
  | 'malformed'
  | 'incomplete'
  | 'invalid-value';

/** The fields of a {@link SourceError}. */
export interface SourceErrorInit {
  /** What kind of problem it is. */
  code: SourceErrorCode;
  /** Short description of the source, e.g. `secret-dir /etc/db`. Never content. */
  source: string;
  /** The file the problem was found in, when there is one. A path, never content. */
  file?: string | undefined;
  /** The key concerned (`host`, `port`, `password` ...), when known. Only known key names. */
  key?: string | undefined;
  /** Human text written by hotload-core itself: never contains file contents. */
  problem: string;
  /** The errno code (`ENOENT`, `EACCES` ...) for file-system problems. */
  errno?: string | undefined;
}

/**
 * A typed, secret-safe error from a connection source.
 *
 * Its message is composed only of the source description, the file path, the key name
 * and a problem text written by hotload-core: never of anything read from a file (no
 * values, no parser messages, no unknown parameter names, which also come from contents).
 * It carries no `cause` for the same reason.
 */
export class SourceError extends Error {
  /** Always `SourceError` (what {@link isSourceError} checks, with `code`). */
  override readonly name = 'SourceError';
  /** What kind of problem it is (see {@link SourceErrorCode}). */
  readonly code: SourceErrorCode;
  /** Short, secret-free description of the source, e.g. `secret-directory /etc/db`. */
  readonly source: string;
  /** The file the problem was found in, when there is one (a path, never content). */
  readonly file: string | undefined;
  /** The key concerned (`host`, `port`, `password` ...), when known. */
  readonly key: string | undefined;
  /** What is wrong, in words written by hotload-core: never file contents. */
  readonly problem: string;
  /** The errno code (`ENOENT`, `EACCES` ...) of a file-system failure, else `undefined`. */
  readonly errno: string | undefined;

  constructor(init: SourceErrorInit) {
    const where = init.file ? ` in ${init.file}` : '';
    const key = init.key ? ` [${init.key}]` : '';
    super(`${init.source}: ${init.code}${where}${key}: ${init.problem}`);
    this.code = init.code;
    this.source = init.source;
    this.file = init.file;
    this.key = init.key;
    this.problem = init.problem;
    this.errno = init.errno;
  }

  /** Every field and the message, for structured logs (all secret-free by construction). */
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      source: this.source,
      file: this.file,
      key: this.key,
      problem: this.problem,
      errno: this.errno,
      message: this.message,
    };
  }

  /** `util.inspect` shows `SourceError(<message>)`. */
  [inspect.custom](): string {
    return `SourceError(${this.message})`;
  }
}

/** True when `value` is a {@link SourceError} (also across duplicated module copies). */
export function isSourceError(value: unknown): value is SourceError {
  return (
    value instanceof SourceError ||
    (value instanceof Error &&
      value.name === 'SourceError' &&
      typeof (value as SourceError).code === 'string')
  );
}

/** Builds a SourceError for a failed file-system call, keeping only the errno code. */
export function fsSourceError(source: string, file: string, error: unknown, key?: string): SourceError {
  const errno =
    typeof (error as NodeJS.ErrnoException)?.code === 'string'
      ? (error as NodeJS.ErrnoException).code
      : undefined;
  if (errno === 'ENOENT' || errno === 'ENOTDIR' || errno === 'ELOOP') {
    return new SourceError({
      code: 'missing',
      source,
      file,
      key,
      errno,
      problem: errno === 'ELOOP' ? 'symlink loop' : 'does not exist',
    });
  }
  return new SourceError({
    code: 'unreadable',
    source,
    file,
    key,
    errno,
    problem: errno ? `cannot be read (${errno})` : 'cannot be read',
  });
}
