import type { ConnectionConfig } from './config.js';

/** The kinds of connection source hotload-core itself has (`static`: a fixed config given in code, e.g. hotload-pg's pg options). */
export type BuiltInSourceKind =
  | 'secret-directory'
  | 'dsn-file'
  | 'merged-directories'
  | 'libpq-env'
  | 'static'
  | 'srv';

/**
 * What kind of source a {@link ConnectionSource} is, for logs and metric labels: one of
 * the {@link BuiltInSourceKind}s, or a custom source's own name (e.g. `'vault'`), so a
 * source of your own need not borrow a built-in kind. Editors still suggest the built-in
 * names (the `string & {}` keeps the union from collapsing to `string`).
 */
export type SourceKind = BuiltInSourceKind | (string & {});

/**
 * Something that yields a {@link ConnectionConfig}. Sources are cheap, stateless readers:
 * every `read()` reads everything again. The watcher decides when to call it.
 */
export interface ConnectionSource {
  /** Which kind of source this is (for logs and metric labels). */
  readonly kind: SourceKind;
  /** Human-readable, secret-free description (paths), for logs and metric labels. */
  readonly description: string;
  /** Paths the watcher must watch (directories or files). */
  readonly watchPaths: readonly string[];
  /** Reads and validates now. Rejects with a SourceError, never with anything else. */
  read(): Promise<ConnectionConfig>;
  /**
   * Optional: like `read()`, plus when the content last changed (the newest mtime among
   * the files read). The built-in sources have it; the watcher falls back to `read()`.
   */
  readSnapshot?(): Promise<SourceSnapshot>;
  /**
   * Optional: re-read at least this often, for what no file event announces (a DNS
   * answer). The watcher's resync runs at the shorter of this and its own interval.
   */
  readonly rereadIntervalMillis?: number;
  /**
   * Optional: re-read after a connection failure of the serving generation (the answer
   * may have moved, as an SRV record does when a cluster fails over).
   */
  readonly rereadOnConnectionFailure?: boolean;
}

/** A config and the time its content last changed. */
export interface SourceSnapshot {
  /** The validated config read. */
  readonly config: ConnectionConfig;
  /**
   * ms since epoch: the newest mtime among the files read, and for a kubelet volume of its
   * `..data` link (the swap that made the version visible).
   */
  readonly changedAt: number;
  /**
   * True when the read is one whole published version by construction: one directory
   * read through a kubelet `..data` snapshot (a `SecretDirectorySource` on a Secret
   * volume; not merged directories, which two writers may change a moment apart). The
   * `SourceWatcher` emits such a read at once, even if file events came during it, where
   * another read must first confirm it. Absent means false.
   */
  readonly atomic?: boolean;
}

/** Declarative form accepted by `createSource()` and by hotload-pg's `hotload.source` option. */
export type SourceSpec =
  | { readonly secretDirectory: string }
  | { readonly dsnFile: string }
  /** Merged: later directories override earlier ones, key by key. */
  | { readonly directories: readonly string[] }
  | { readonly libpqEnv: true; readonly env?: NodeJS.ProcessEnv };
