import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';

/**
 * How a file source reads its files: `sync` makes each call at once on the event loop,
 * `async` through libuv's thread pool, `auto` (the default) picks `sync` for a folder on
 * a memory or local disk file system and `async` anywhere else (the package README says which).
 */
export type FileReadMode = 'auto' | 'sync' | 'async';

/** Options of the file sources (`SecretDirectorySource`, `MergedDirectoriesSource`, `DsnFileSource`). */
export interface FileSourceOptions {
  /** How the files are read; default `auto`. See {@link FileReadMode}. */
  readonly fileReads?: FileReadMode;
}

/** An open file, as a source reads one. */
export interface OpenSourceFile {
  stat(): Promise<fs.Stats>;
  /** Reads into `buffer` at `offset`, from the current position; resolves with the bytes read. */
  read(buffer: Buffer, offset: number, length: number): Promise<number>;
  /** Closes without waiting: the file is read, and a failed close leaves nothing to report. */
  close(): void;
}

/**
 * The file system calls a file source makes. Both kinds resolve promises, so one read
 * logic serves both; the `sync` kind's promises are settled when returned, so a whole
 * folder read runs in microtasks, without going back to the event loop between calls.
 */
export interface FileReads {
  readonly mode: 'sync' | 'async';
  readlink(path: string): Promise<string>;
  readdir(path: string): Promise<string[]>;
  lstat(path: string): Promise<fs.Stats>;
  open(path: string): Promise<OpenSourceFile>;
}

/** Through libuv's thread pool: each call is a wait for the event loop's next turn. */
export const ASYNC_FILE_READS: FileReads = {
  mode: 'async',
  readlink: (path) => fsp.readlink(path),
  readdir: (path) => fsp.readdir(path),
  lstat: (path) => fsp.lstat(path),
  async open(path) {
    const handle = await fsp.open(path, 'r');
    return {
      stat: () => handle.stat(),
      read: async (buffer, offset, length) => (await handle.read(buffer, offset, length, null)).bytesRead,
      close: () => void handle.close().catch(() => undefined),
    };
  },
};

/**
 * At once, on the event loop (a thrown error becomes the promise's rejection). For a
 * folder of small files in memory or in the page cache the calls take microseconds, while
 * under load each thread-pool call waits its turn behind every other callback: a
 * kubelet volume's read (link, listing, each file's open, stat and read, link again)
 * took 5 ms from the swap to the change that way, and under 1 ms this way
 * (`bench/switch-phases.bench.ts`, `detect_p50_ms`).
 */
export const SYNC_FILE_READS: FileReads = {
  mode: 'sync',
  readlink: async (path) => fs.readlinkSync(path),
  readdir: async (path) => fs.readdirSync(path),
  lstat: async (path) => fs.lstatSync(path),
  async open(path) {
    const fd = fs.openSync(path, 'r');
    return {
      stat: async () => fs.fstatSync(fd),
      read: async (buffer, offset, length) => fs.readSync(fd, buffer, offset, length, null),
      close: () => {
        try {
          fs.closeSync(fd);
        } catch {
          // the file is read; nothing to report
        }
      },
    };
  },
};

/**
 * File systems whose reads never wait on a network or another process (Linux `statfs`
 * magic numbers): a kubelet Secret, projected or downward API volume is tmpfs, a
 * ConfigMap volume is on the node's disk. A network file system (NFS, SMB, Ceph), FUSE
 * (virtiofs in Kata containers) or 9p (gVisor, WSL) can block a call for as long as its
 * server takes, which must never freeze the application's event loop: those, and any
 * file system not named here, are read `async`.
 */
const LOCAL_FILE_SYSTEMS: ReadonlySet<number> = new Set([
  0x01021994, // tmpfs
  0x858458f6, // ramfs
  0xef53, // ext2, ext3, ext4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x794c7630, // overlayfs (a container's own file system)
  0xf2f52010, // f2fs
  0x2fc12fc1, // zfs
]);

/** The reads for the file system type `type` (a Linux `statfs` magic number). */
export function fileReadsForType(type: number): FileReads {
  return LOCAL_FILE_SYSTEMS.has(type) ? SYNC_FILE_READS : ASYNC_FILE_READS;
}

/**
 * The reads for files in each folder under a {@link FileReadMode}: for `auto`, by the file
 * system the folder is on (one `statfs` per folder, Linux only). Anything else, and a folder
 * that cannot be looked at yet (asked again next time), is read `async`.
 */
export class FolderFileReads {
  readonly #mode: FileReadMode;
  readonly #known = new Map<string, FileReads>();

  constructor(mode: FileReadMode = 'auto') {
    this.#mode = mode;
  }

  /** The reads for files in `folder`. */
  async for(folder: string): Promise<FileReads> {
    if (this.#mode === 'sync') return SYNC_FILE_READS;
    if (this.#mode === 'async' || process.platform !== 'linux') return ASYNC_FILE_READS;
    const known = this.#known.get(folder);
    if (known) return known;
    try {
      const reads = fileReadsForType((await fsp.statfs(folder)).type);
      this.#known.set(folder, reads);
      return reads;
    } catch {
      return ASYNC_FILE_READS;
    }
  }
}
