/**
 * The output folder's lock file, with real files and real processes: one holder at a time,
 * a waiter goes on when the holder releases, and a lock left by a dead process, by a
 * holder killed mid-write (empty file) or by another host long ago is taken over.
 */
import { spawn } from 'node:child_process';
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { tempDir } from 'hotload-test-support/claims';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FOREIGN_LOCK_STALE_MILLIS, withFolderLock } from '../../src/folder/folder-lock.js';
import { SecretPublisher } from '../../src/folder/secret-publisher.js';

let dir: { path: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir('folder-lock-');
});
afterEach(() => dir.cleanup());

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

describe('withFolderLock', () => {
  it('lets a second holder in only after the first releases, and leaves no file behind', async () => {
    const lock = join(dir.path, '.lock.default.app');
    const events: string[] = [];
    let release!: () => void;
    let entered!: () => void;
    const firstIn = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const first = withFolderLock(lock, async () => {
      events.push('first in');
      entered();
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      events.push('first out');
    });
    await firstIn; // the first holder's own temp file is gone once it holds the lock
    // The second writes its own file before its attempts: once it is there, it is waiting.
    const second = withFolderLock(lock, async () => void events.push('second in'));
    while (!(await readdir(dir.path)).some((name) => name.endsWith('.tmp')))
      await new Promise((resolve) => setImmediate(resolve));
    expect(events).toEqual(['first in']);
    release();
    await Promise.all([first, second]);
    expect(events).toEqual(['first in', 'first out', 'second in']);
    expect(await readdir(dir.path)).toEqual([]);
  });

  it('takes over a lock left by a dead process, an empty one, or an old one from another host', async () => {
    const lock = join(dir.path, '.lock.default.app');
    const leftovers = [
      JSON.stringify({ pid: await deadPid(), host: (await import('node:os')).hostname(), at: Date.now() }),
      '',
      JSON.stringify({ pid: 1, host: 'another-host', at: Date.now() - FOREIGN_LOCK_STALE_MILLIS - 1 }),
    ];
    for (const leftover of leftovers) {
      await writeFile(lock, leftover);
      expect(await withFolderLock(lock, async () => 'ran')).toBe('ran');
      expect(await readdir(dir.path)).toEqual([]);
    }
  });

  it('runs without a lock file when the folder does not exist (a dry run creates nothing)', async () => {
    const lock = join(dir.path, 'missing', '.lock.default.app');
    expect(await withFolderLock(lock, async () => 'ran')).toBe('ran');
    expect(await readdir(dir.path)).toEqual([]);
  });
});

describe('leftovers of a holder killed midway (crash drill: <secret>.lock.<pid>.<random>.tmp)', () => {
  it('a publisher sweeps the copies and moved-aside locks of dead processes, and keeps a live one', async () => {
    const secret = join(dir.path, 'default', 'app');
    const lock = `${secret}.lock`;
    await mkdir(join(dir.path, 'default'), { recursive: true });
    const dead = await deadPid();
    const holder = (pid: number, at = Date.now()) => JSON.stringify({ pid, host: hostname(), at });
    const leftovers = [
      [`${lock}.${dead}.0a1b2c3d.tmp`, holder(dead)], // killed between write and rm
      [`${lock}.stale.${dead}.0a1b2c3e`, holder(dead)], // killed between rename and rm
      [`${lock}.${dead}.0a1b2c3f.tmp`, ''], // killed mid-write, long ago
    ] as const;
    for (const [file, text] of leftovers) await writeFile(file, text);
    const longAgo = new Date(Date.now() - FOREIGN_LOCK_STALE_MILLIS - 60_000);
    await utimes(leftovers[2][0], longAgo, longAgo);
    // A live process's copy, one on another host, and a fresh unreadable copy are kept.
    const live = [
      [`${lock}.${process.pid}.0b1b2c3d.tmp`, holder(process.pid)],
      [`${lock}.${dead}.0c1b2c3d.tmp`, JSON.stringify({ pid: dead, host: 'other-host', at: Date.now() })],
      [`${lock}.${dead}.0d1b2c3d.tmp`, ''],
    ] as const;
    for (const [file, text] of live) await writeFile(file, text);

    const publisher = new SecretPublisher(secret);
    expect((await publisher.stale()).sort()).toEqual(leftovers.map(([file]) => file).sort());
    await publisher.sweep();
    expect((await readdir(join(dir.path, 'default'))).sort()).toEqual(
      live.map(([file]) => file.slice(join(dir.path, 'default').length + 1)).sort(),
    );
    expect(await publisher.stale()).toEqual([]);
  });
});
