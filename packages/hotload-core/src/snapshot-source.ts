import type { ConnectionConfig } from './config.js';
import { SourceError } from './errors.js';
import type { SourceSnapshot } from './source.js';

/**
 * The built-in sources' `read()` and `readSnapshot()`: each reads once through
 * `readNow()`, and whatever that throws comes out as a SourceError labelled with the
 * source's description.
 */
export abstract class SnapshotSource {
  abstract readonly description: string;

  async read(): Promise<ConnectionConfig> {
    return (await this.readSnapshot()).config;
  }

  async readSnapshot(): Promise<SourceSnapshot> {
    try {
      return await this.readNow();
    } catch (error) {
      throw relabel(error, this.description);
    }
  }

  /** Reads and validates now; may reject with anything. */
  protected abstract readNow(): Promise<SourceSnapshot>;
}

/** The same error with this source's description; anything unexpected becomes `unreadable`. */
export function relabel(error: unknown, source: string): SourceError {
  if (!(error instanceof SourceError)) {
    return new SourceError({ code: 'unreadable', source, problem: 'unexpected failure while reading' });
  }
  return new SourceError({
    code: error.code,
    source,
    file: error.file,
    key: error.key,
    problem: error.problem,
    errno: error.errno,
  });
}
