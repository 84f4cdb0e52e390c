/**
 * The two ways a file source reads (file-reads.ts): `sync` reads a kubelet volume without
 * the event loop turning, `async` through the thread pool; both give the same config and
 * the same errors; `auto` picks by the folder's file system.
 */
import { mkdir, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ASYNC_FILE_READS, FolderFileReads, fileReadsForType, SYNC_FILE_READS } from '../src/file-reads.js';
import {
  DsnFileSource,
  type FileReadMode,
  SecretDirectorySource,
  writeSecretAtomically,
} from '../src/index.js';
import { tempDir } from './helpers.js';
import { sourceError, writeFiles } from './sources.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('hotload-file-reads-'));
});
afterEach(async () => cleanup());

const MODES: readonly FileReadMode[] = ['sync', 'async'];
const valid = { hostname: 'h', username: 'u', database: 'd', password: 'pw' };

/** Whether the event loop turned (a setImmediate ran) while `read` was under way. */
async function loopTurnedDuring(read: () => Promise<unknown>): Promise<boolean> {
  let turned = false;
  const immediate = setImmediate(() => {
    turned = true;
  });
  await read();
  clearImmediate(immediate);
  return turned;
}

describe('file reads', () => {
  it('sync reads a whole kubelet volume (link, listing, every file, link again) without the event loop turning; async does not', async () => {
    await writeSecretAtomically(dir, valid);
    const turned = async (fileReads: FileReadMode) =>
      loopTurnedDuring(async () => {
        const config = await new SecretDirectorySource(dir, { fileReads }).read();
        expect(config.user).toBe('u');
      });
    // The first read of a source also looks at nothing else when the mode is given.
    expect(await turned('sync')).toBe(false);
    expect(await turned('async')).toBe(true);
  });

  it('a DSN file, too', async () => {
    const file = join(dir, 'dsn.txt');
    await writeFiles(dir, { 'dsn.txt': 'host=h user=u dbname=d' });
    expect(await loopTurnedDuring(() => new DsnFileSource(file, { fileReads: 'sync' }).read())).toBe(false);
  });

  it.each([
    ['a plain folder', (d: string) => writeFiles(d, valid)],
    ['a kubelet volume', (d: string) => writeSecretAtomically(d, valid)],
    ['a DSN beside per-key files', (d: string) => writeFiles(d, { 'dsn.txt': 'host=a port=6000', ...valid })],
  ])('both read %s to the same config', async (_name, write) => {
    await write(dir);
    const [sync, async] = await Promise.all(
      MODES.map((fileReads) => new SecretDirectorySource(dir, { fileReads }).read()),
    );
    expect(sync!.fingerprint).toBe(async!.fingerprint);
    expect(sync!.toJSON()).toEqual(async!.toJSON());
  });

  it.each([
    ['a missing folder', null],
    ['an empty password', { ...valid, password: '\n' }],
    ['binary content', { ...valid, password: new Uint8Array([0x41, 0, 0x42]) }],
    ['invalid UTF-8', { ...valid, password: new Uint8Array([0xff, 0xfe]) }],
    ['a file over 1 MiB', { ...valid, sslmode: 'a'.repeat(1024 * 1024 + 1) }],
  ])('both give the same error for %s', async (_name, files) => {
    const folder = files === null ? join(dir, 'nope') : dir;
    if (files !== null) await writeFiles(dir, files);
    const errors = await Promise.all(
      MODES.map((fileReads) => sourceError(new SecretDirectorySource(folder, { fileReads }).read())),
    );
    expect(errors[0]!.message).toBe(errors[1]!.message);
    expect(errors[0]!.code).toBe(errors[1]!.code);
  });

  it('both give the same error for a key that is a folder', async () => {
    await writeFiles(dir, valid);
    await mkdir(join(dir, 'sslrootcert'));
    const errors = await Promise.all(
      MODES.map((fileReads) => sourceError(new SecretDirectorySource(dir, { fileReads }).read())),
    );
    expect(errors[0]!.message).toContain('is a directory');
    expect(errors[0]!.message).toBe(errors[1]!.message);
  });
});

describe('auto: by the folder file system', () => {
  it('memory and local disk file systems are read sync; network, FUSE, 9p and unknown ones async', () => {
    for (const local of [0x01021994, 0xef53, 0x58465342, 0x794c7630])
      expect(fileReadsForType(local)).toBe(SYNC_FILE_READS);
    // NFS, SMB2, FUSE (virtiofs), 9p (gVisor, WSL), and a number no file system has
    for (const remote of [0x6969, 0xfe534d42, 0x65735546, 0x01021997, 0x1234])
      expect(fileReadsForType(remote)).toBe(ASYNC_FILE_READS);
  });

  it.runIf(process.platform === 'linux')('a folder is read as its file system says', async () => {
    const { type } = await statfs(dir);
    expect(await new FolderFileReads('auto').for(dir)).toBe(fileReadsForType(type));
    expect(await new FolderFileReads('async').for(dir)).toBe(ASYNC_FILE_READS);
    expect(await new FolderFileReads('sync').for(dir)).toBe(SYNC_FILE_READS);
  });

  it.runIf(process.platform === 'linux')(
    'a folder that is not there yet is read async, and looked at again once it is',
    async () => {
      const later = join(dir, 'later');
      const reads = new FolderFileReads('auto');
      expect(await reads.for(later)).toBe(ASYNC_FILE_READS);
      await mkdir(later);
      expect(await reads.for(later)).toBe(fileReadsForType((await statfs(later)).type));
    },
  );
});
