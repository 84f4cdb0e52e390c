import { fsSourceError, SourceError } from './errors.js';
import { ASYNC_FILE_READS, type FileReads, type OpenSourceFile } from './file-reads.js';

/** Files larger than this are refused: no connection setting is anywhere near it. */
export const MAX_SOURCE_FILE_BYTES = 1024 * 1024;

export type ReadTextResult =
  | { readonly kind: 'text'; readonly text: string; readonly mtimeMs: number }
  | { readonly kind: 'absent'; readonly errno: string }
  | { readonly kind: 'error'; readonly error: SourceError };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads one small UTF-8 text file for a source. `path` is where to read, `shownAs` the
 * path errors name (the user-visible one, not a `..data` folder). A missing file is
 * `absent` (the caller decides whether that matters); binary content, invalid UTF-8, a
 * directory or a file over 1 MiB is an error that names the file, never its content.
 * `reads` makes the file system calls (see file-reads.ts).
 */
export async function readSourceText(
  path: string,
  shownAs: string,
  source: string,
  key?: string,
  reads: FileReads = ASYNC_FILE_READS,
): Promise<ReadTextResult> {
  let handle: OpenSourceFile | undefined;
  try {
    handle = await reads.open(path);
    const stat = await handle.stat();
    if (stat.isDirectory()) {
      return {
        kind: 'error',
        error: new SourceError({ code: 'unreadable', source, file: shownAs, key, problem: 'is a directory' }),
      };
    }
    if (stat.size > MAX_SOURCE_FILE_BYTES) {
      return { kind: 'error', error: tooLarge(source, shownAs, key) };
    }
    // Sized by fstat, one byte over so that growth since then shows, and grown (up to one
    // byte past the limit) if the file did grow. (A buffer of the limit's size for every
    // file, zero-filled, made each read of a secret directory cost milliseconds.)
    let buffer: Buffer = Buffer.alloc(stat.size + 1);
    let length = 0;
    for (;;) {
      if (length === buffer.length) buffer = grown(buffer);
      const wanted = buffer.length - length;
      const bytesRead = await handle.read(buffer, length, wanted);
      length += bytesRead;
      if (length > MAX_SOURCE_FILE_BYTES) return { kind: 'error', error: tooLarge(source, shownAs, key) };
      // A regular file's short read is its end: no extra read to see 0 bytes.
      if (bytesRead === 0 || (bytesRead < wanted && stat.isFile())) break;
    }
    const bytes = buffer.subarray(0, length);
    if (bytes.includes(0)) {
      return {
        kind: 'error',
        error: new SourceError({
          code: 'malformed',
          source,
          file: shownAs,
          key,
          problem: 'binary content (NUL bytes)',
        }),
      };
    }
    let text: string;
    try {
      text = utf8.decode(bytes);
    } catch {
      return {
        kind: 'error',
        error: new SourceError({ code: 'malformed', source, file: shownAs, key, problem: 'not valid UTF-8' }),
      };
    }
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    return { kind: 'text', text, mtimeMs: stat.mtimeMs };
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException)?.code;
    if (errno === 'ENOENT' || errno === 'ENOTDIR') return { kind: 'absent', errno };
    return { kind: 'error', error: fsSourceError(source, shownAs, error, key) };
  } finally {
    // Not awaited: the text is read, and a switch waits on this read; on a busy event loop
    // each await is a wait for its turn.
    handle?.close();
  }
}

/** `full` copied into a buffer twice its size, at most one byte past the limit. */
function grown(full: Buffer): Buffer {
  const bigger = Buffer.alloc(Math.min(full.length * 2, MAX_SOURCE_FILE_BYTES + 1));
  full.copy(bigger);
  return bigger;
}

function tooLarge(source: string, file: string, key: string | undefined): SourceError {
  return new SourceError({ code: 'unreadable', source, file, key, problem: 'larger than 1 MiB' });
}
