/**
 * The watcher when file events do not come (NFS, some CSI drivers, a change the event
 * watch cannot see): the polling mode and the periodic resync find the change anyway.
 * Real files and the real watcher; the event path is made to fail for real: in 'polling'
 * and 'none' mode no fs.watch handle exists, and in 'events' mode the change is an in-place
 * edit inside the `..data` folder, a level below what the event watch covers.
 */
import { EventEmitter, once } from 'node:events';
import { readlink, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ConnectionConfig,
  type ConnectionSource,
  SecretDirectorySource,
  type SourceSnapshot,
  SourceWatcher,
  type SourceWatcherOptions,
  toSecretFiles,
  writeSecretAtomically,
} from '../src/index.js';
import { EventLog, handleCount } from './event-log.js';
import { tempDir } from './helpers.js';

let root: string;
let dir: string;
let cleanup: () => Promise<void>;
const watchers: SourceWatcher[] = [];
beforeEach(async () => {
  ({ dir: root, cleanup } = await tempDir('hotload-watch-modes-'));
  dir = join(root, 'secret');
  await writeSecretAtomically(dir, toSecretFiles(config('one')));
});
afterEach(async () => {
  await Promise.all(watchers.splice(0).map((w) => w.close()));
  await cleanup();
});

const config = (password: string) =>
  ConnectionConfig.create({ host: 'db', port: 5432, user: 'app', password, database: 'app' });

async function startWatching(
  options: SourceWatcherOptions,
  source: ConnectionSource = new SecretDirectorySource(dir),
) {
  const watcher = new SourceWatcher(source, options);
  watchers.push(watcher);
  const log = new EventLog(watcher);
  await watcher.start();
  return { watcher, log };
}

/**
 * Replaces the password file inside the current `..data` folder (written aside, renamed
 * over, so no read sees it half-written): no swap, and no event the watch covers.
 */
async function editInsideDataFolder(password: string): Promise<void> {
  const dataFolder = join(dir, await readlink(join(dir, '..data')));
  await writeFile(join(dataFolder, 'password.new'), password);
  await rename(join(dataFolder, 'password.new'), join(dataFolder, 'password'));
}

/** A secret directory source that announces every read it does (`read` event). */
class AnnouncedReads extends EventEmitter implements ConnectionSource {
  readonly #inner = new SecretDirectorySource(dir);
  readonly kind = this.#inner.kind;
  readonly description = this.#inner.description;
  readonly watchPaths = this.#inner.watchPaths;
  reads = 0;

  async read(): Promise<ConnectionConfig> {
    return (await this.readSnapshot()).config;
  }

  async readSnapshot(): Promise<SourceSnapshot> {
    const snapshot = await this.#inner.readSnapshot();
    this.reads++;
    this.emit('read');
    return snapshot;
  }
}

describe('SourceWatcher when file events do not come', () => {
  it('events mode: a change the event watch cannot see is found by the resync (and only by it)', async () => {
    const withResync = await startWatching({ resyncIntervalMillis: 50 });
    const withoutResync = await startWatching({ resyncIntervalMillis: 0 });
    await editInsideDataFolder('edited-in-place');
    expect((await withResync.log.nextChange()).config.password).toBe('edited-in-place');
    await editInsideDataFolder('one');
    expect((await withResync.log.nextChange()).config.password).toBe('one');
    // A swap the event watch does see: the watcher without the safety net goes from 'one'
    // straight to 'two', so it never saw the in-place edit while it lasted. (A read caused
    // by the swap's first events may see the old folder, but that holds 'one' again.)
    await writeSecretAtomically(dir, toSecretFiles(config('two')));
    const next = await withoutResync.log.nextChange();
    expect(next.config.password).toBe('two');
    expect(withoutResync.log.events).toHaveLength(1);
  });

  it('polling mode: no fs.watch at all, and swaps and in-place edits are still seen', async () => {
    const eventWatchesBefore = handleCount('FSEventWrap');
    const pollsBefore = handleCount('StatWatcher');
    const { log } = await startWatching({
      watchMode: 'polling',
      pollIntervalMillis: 20,
      resyncIntervalMillis: 0,
    });
    expect(handleCount('FSEventWrap')).toBe(eventWatchesBefore);
    expect(handleCount('StatWatcher')).toBeGreaterThan(pollsBefore);
    await writeSecretAtomically(dir, toSecretFiles(config('two')));
    expect((await log.nextChange()).config.password).toBe('two');
    await writeSecretAtomically(dir, toSecretFiles(config('three')));
    expect((await log.nextChange()).config.password).toBe('three');
  });

  it("'none' mode: no watch handle, and the resync alone finds the change", async () => {
    const handlesBefore = handleCount('FSEventWrap') + handleCount('StatWatcher');
    const { log } = await startWatching({ watchMode: 'none', resyncIntervalMillis: 20 });
    expect(handleCount('FSEventWrap') + handleCount('StatWatcher')).toBe(handlesBefore);
    await writeSecretAtomically(dir, toSecretFiles(config('two')));
    expect((await log.nextChange()).config.password).toBe('two');
  });

  it('the resync is cheap: it re-reads, but emits nothing while the fingerprint is the same', async () => {
    const source = new AnnouncedReads();
    const { log } = await startWatching({ watchMode: 'none', resyncIntervalMillis: 10 }, source);
    const readsAfterStart = source.reads;
    while (source.reads < readsAfterStart + 5) await once(source, 'read');
    expect(log.events).toEqual([]);
    await writeSecretAtomically(dir, toSecretFiles(config('two')));
    expect((await log.nextChange()).config.password).toBe('two');
    const readsAtChange = source.reads;
    while (source.reads < readsAtChange + 5) await once(source, 'read');
    expect(log.events).toHaveLength(1);
  });

  it('rejects bad options with an error naming the option', () => {
    const source = new SecretDirectorySource(dir);
    expect(() => new SourceWatcher(source, { watchMode: 'inotify' as never })).toThrow(
      'watchMode must be one of events, polling, none',
    );
    expect(() => new SourceWatcher(source, { pollIntervalMillis: -1 })).toThrow(
      'pollIntervalMillis must be >= 0',
    );
    expect(() => new SourceWatcher(source, { resyncIntervalMillis: Number.NaN })).toThrow(
      'resyncIntervalMillis must be >= 0',
    );
  });
});
