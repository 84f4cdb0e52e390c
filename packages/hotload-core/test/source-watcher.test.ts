import { execFile } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AtomicSecretWriter,
  ConnectionConfig,
  type ConnectionSource,
  createSource,
  DsnFileSource,
  formatKeyValueDsn,
  LibpqEnvironmentSource,
  MergedDirectoriesSource,
  SecretDirectorySource,
  SourceWatcher,
  toSecretFiles,
  writeSecretAtomically,
} from '../src/index.js';
import { EventLog, watchHandleCount } from './event-log.js';
import { tempDir } from './helpers.js';
import { writeFiles } from './sources.js';

let root: string;
let cleanup: () => Promise<void>;
const watchers: SourceWatcher[] = [];
beforeEach(async () => {
  ({ dir: root, cleanup } = await tempDir('hotload-watch-'));
});
afterEach(async () => {
  await Promise.all(watchers.splice(0).map((w) => w.close()));
  await cleanup();
});

const SECRET = 'Watcher-Secret-77';
const execFileAsync = promisify(execFile);
const config = (password: string, extra: Partial<Parameters<typeof ConnectionConfig.create>[0]> = {}) =>
  ConnectionConfig.create({ host: 'db', port: 5432, user: 'app', password, database: 'app', ...extra });

async function startWatching(source: ConnectionSource, debounceMillis?: number) {
  const watcher = new SourceWatcher(source, debounceMillis === undefined ? {} : { debounceMillis });
  watchers.push(watcher);
  const log = new EventLog(watcher);
  const initial = await watcher.start();
  return { watcher, log, initial };
}

/**
 * `inner`, made observable: each read announces `('read', password)` on `reads` once it
 * has read, and `holdReadOf(password, until)` keeps the next read of `password` from
 * returning before `until`.
 */
function observedReads(inner: ConnectionSource & Required<Pick<ConnectionSource, 'readSnapshot'>>) {
  const reads = new EventEmitter();
  let hold: { password: string; until: Promise<void> } | undefined;
  const source: ConnectionSource = {
    kind: inner.kind,
    description: inner.description,
    watchPaths: inner.watchPaths,
    read: () => inner.read(),
    readSnapshot: async () => {
      const snapshot = await inner.readSnapshot();
      reads.emit('read', snapshot.config.password);
      const held = hold;
      if (held !== undefined && held.password === snapshot.config.password) {
        hold = undefined;
        await held.until;
      }
      return snapshot;
    },
  };
  const holdReadOf = (password: string, until: Promise<void>): void => {
    hold = { password, until };
  };
  return { source, reads, holdReadOf };
}

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/**
 * Watches `inner` (debounce 0) and changes its password from `one` to `two` with `write`,
 * disturbing the read that sees `two`: `reread()` while it runs, as a file event would.
 * Resolves how many reads had seen `two` when the change was emitted.
 */
async function readsOfTwoAtChange(
  inner: SecretDirectorySource | MergedDirectoriesSource,
  write: () => Promise<unknown>,
): Promise<number> {
  const observed = observedReads(inner);
  const { watcher, log } = await startWatching(observed.source, 0);
  const disturbance = gate();
  observed.holdReadOf('two', disturbance.opened);
  let readsOfTwo = 0;
  observed.reads.on('read', (password: string) => {
    if (password !== 'two') return;
    readsOfTwo++;
    if (readsOfTwo === 1) {
      watcher.reread();
      disturbance.open();
    }
  });
  let atChange = 0;
  watcher.once('change', () => {
    atChange = readsOfTwo;
  });
  await write();
  expect((await log.nextChange()).config.password).toBe('two');
  return atChange;
}

describe('SourceWatcher on a kubelet-style secret directory', () => {
  it('emits one change per atomic ..data swap, with the old fingerprint and timing data', async () => {
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('one')));
    const { watcher, log, initial } = await startWatching(new SecretDirectorySource(dir));
    expect(initial.password).toBe('one');
    for (const password of ['two', 'three', 'four']) {
      const before = watcher.current!.fingerprint;
      await writeSecretAtomically(dir, toSecretFiles(config(password)));
      const change = await log.nextChange();
      expect(change.config.password).toBe(password);
      expect(change.previousFingerprint).toBe(before);
      expect(watcher.current).toBe(change.config);
      expect(change.detectedAt).toBeLessThanOrEqual(change.emittedAt);
      expect(change.changedAt).toBeLessThanOrEqual(change.emittedAt);
      expect(change.changedAt).toBeGreaterThan(0);
    }
  });

  it('a read begun before the ..data swap and ended after it is followed by one that sees the swap', async () => {
    // A read may start just before a swap (reread() after refused credentials, a key file
    // the writer created first). Here it reads the old secret, then lasts until the whole
    // write is done: the swap's events all come while it runs, and must lead to one more
    // read. Driven by the write's steps, no timing.
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('one')));
    const observed = observedReads(new SecretDirectorySource(dir));
    const { watcher, log } = await startWatching(observed.source, 0);
    const written = gate();
    observed.holdReadOf('one', written.opened);
    await new AtomicSecretWriter(dir).write(toSecretFiles(config('two')), {
      onStep: async (step) => {
        if (step !== 'swap-data') return;
        const readBeforeSwap = once(observed.reads, 'read');
        watcher.reread();
        expect(await readBeforeSwap).toEqual(['one']);
      },
    });
    written.open();
    expect((await log.nextChange()).config.password).toBe('two');
  });

  it("the kubelet's new timestamped folder starts no read: a kubelet write is read from its swap on", async () => {
    // By difference with an event that counts: once the new folder is created and filled
    // (just before the swap), a plain file appears beside it; the read that file causes
    // must be the first since start (inotify reports the folder's events before it).
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('one')));
    const observed = observedReads(new SecretDirectorySource(dir));
    const { log } = await startWatching(observed.source, 0);
    const reads: string[] = [];
    observed.reads.on('read', (password: string) => reads.push(password));
    await new AtomicSecretWriter(dir).write(toSecretFiles(config('two')), {
      onStep: async (step) => {
        if (step !== 'swap-data') return;
        const witnessRead = once(observed.reads, 'read');
        await writeFile(join(dir, 'witness'), 'an unrelated file');
        await witnessRead;
        expect(reads).toEqual(['one']);
      },
    });
    expect((await log.nextChange()).config.password).toBe('two');
  });

  it('a read through ..data is emitted even when events came during it; a plain directory read waits for the next', async () => {
    // The kubelet removes the old folder right after the swap, so the read that sees the
    // new secret is nearly always disturbed; it is one whole version all the same.
    const kube = join(root, 'secret');
    await writeSecretAtomically(kube, toSecretFiles(config('one')));
    expect(
      await readsOfTwoAtChange(new SecretDirectorySource(kube), () =>
        writeSecretAtomically(kube, toSecretFiles(config('two'))),
      ),
    ).toBe(1);
    // A plain directory may be half-way through an edit: its disturbed read is confirmed.
    const plain = join(root, 'plain');
    await writeFiles(plain, { host: 'db', user: 'app', dbname: 'app', password: 'one' });
    expect(
      await readsOfTwoAtChange(new SecretDirectorySource(plain), () =>
        writeFile(join(plain, 'password'), 'two'),
      ),
    ).toBe(2);
    // So are merged kubelet volumes: two writers may be changing them a moment apart.
    const [hostMount, secretMount] = [join(root, 'configmap'), join(root, 'secret-mount')];
    await writeSecretAtomically(hostMount, { hostname: 'db', database: 'app' });
    await writeSecretAtomically(secretMount, { username: 'app', password: 'one' });
    expect(
      await readsOfTwoAtChange(new MergedDirectoriesSource([hostMount, secretMount]), () =>
        writeSecretAtomically(secretMount, { username: 'app', password: 'two' }),
      ),
    ).toBe(2);
  });

  it('emits nothing for a swap with identical content or whitespace-only differences', async () => {
    const dir = join(root, 'secret');
    const files = toSecretFiles(config('same'));
    await writeSecretAtomically(dir, files);
    const { log } = await startWatching(new SecretDirectorySource(dir));
    // A real swap (new folder, ..data renamed) whose config is the same:
    await writeSecretAtomically(dir, { ...files, 'ro_uri_dsn.txt': 'not read' });
    await writeSecretAtomically(dir, { ...files, password: 'same\n', hostname: ' db \n' });
    // The next event must be the real change below: nothing came from the two swaps above.
    await writeSecretAtomically(dir, toSecretFiles(config('different')));
    expect((await log.nextChange()).config.password).toBe('different');
  });

  it('reports an invalid swap as an error, keeps the last good config, and recovers', async () => {
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('good')));
    const { watcher, log, initial } = await startWatching(new SecretDirectorySource(dir));
    await writeSecretAtomically(dir, { ...toSecretFiles(config('good')), port: `not-a-port-${SECRET}` });
    const error = await log.nextError();
    expect([error.code, error.file, error.key]).toEqual(['invalid-value', join(dir, 'port'), 'port']);
    expect(error.message).not.toContain(SECRET);
    expect(watcher.current).toBe(initial);
    await writeSecretAtomically(dir, toSecretFiles(config('recovered')));
    const change = await log.nextChange();
    expect(change.config.password).toBe('recovered');
    expect(change.previousFingerprint).toBe(initial.fingerprint);
  });

  it('survives deletion and re-creation of the directory', async () => {
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('before')));
    const { log } = await startWatching(new SecretDirectorySource(dir));
    await rm(dir, { recursive: true });
    // `rm -r` is not atomic: half-way errors may come first, never a change
    let error = await log.nextError();
    while (error.code !== 'missing') error = await log.nextError();
    await writeSecretAtomically(dir, toSecretFiles(config('after')));
    const { change } = await log.changeWhere((c) => c.config.password === 'after');
    expect(change.config.password).toBe('after');
    // and it keeps watching the new directory
    await writeSecretAtomically(dir, toSecretFiles(config('after-again')));
    expect((await log.changeWhere((c) => c.config.password === 'after-again')).skipped).toEqual([]);
  });

  it('reads an invalid secret again until it is valid, even when no file event tells it so', async () => {
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('good')));
    // No resync: only the recovery poll can notice what follows.
    const watcher = new SourceWatcher(new SecretDirectorySource(dir), { resyncIntervalMillis: 0 });
    watchers.push(watcher);
    const log = new EventLog(watcher);
    await watcher.start();
    const broken = await writeSecretAtomically(dir, { ...toSecretFiles(config('good')), port: 'not-a-port' });
    expect((await log.nextError()).code).toBe('invalid-value');
    // Mended inside the published folder, below what is watched (as a write whose events
    // were lost: a directory re-created while the watch re-arms, read half-written).
    await writeFile(join(dir, broken.dataDir!, 'port'), '6543');
    expect((await log.nextChange()).config.port).toBe(6543);
  });

  it('survives deletion and re-creation of the parent directory too', async () => {
    const dir = join(root, 'mount', 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('before')));
    const { log } = await startWatching(new SecretDirectorySource(dir));
    await rm(join(root, 'mount'), { recursive: true });
    let error = await log.nextError();
    while (error.code !== 'missing') error = await log.nextError();
    await writeSecretAtomically(dir, toSecretFiles(config('after')));
    expect((await log.nextChange()).config.password).toBe('after');
    await writeSecretAtomically(dir, toSecretFiles(config('watched-again')));
    expect((await log.nextChange()).config.password).toBe('watched-again');
  });

  it('the same identical-content check works after recovery: no event when it comes back unchanged', async () => {
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('same')));
    const { log } = await startWatching(new SecretDirectorySource(dir));
    await writeSecretAtomically(dir, { hostname: 'db' }); // incomplete
    expect((await log.nextError()).code).toBe('incomplete');
    await writeSecretAtomically(dir, toSecretFiles(config('same'))); // back to the old config: no change
    await writeSecretAtomically(dir, toSecretFiles(config('new')));
    expect((await log.nextChange()).config.password).toBe('new');
  });
});

describe('SourceWatcher on plain files', () => {
  it('sees in-place writes', async () => {
    const dir = join(root, 'plain');
    await writeFiles(dir, { host: 'db', user: 'app', dbname: 'app', password: 'one' });
    const { log } = await startWatching(new SecretDirectorySource(dir));
    await writeFile(join(dir, 'password'), 'two');
    const { change } = await log.changeWhere((c) => c.config.password === 'two');
    // an in-place write is not atomic: an `empty` error may come first, never another config
    expect(change.config.password).toBe('two');
  });

  it('sees rename-over writes (editors, `mv`)', async () => {
    const dir = join(root, 'plain');
    await writeFiles(dir, { host: 'db', user: 'app', dbname: 'app', password: 'one' });
    const { log } = await startWatching(new SecretDirectorySource(dir));
    await writeFile(join(dir, '.password.swp'), 'two');
    await rename(join(dir, '.password.swp'), join(dir, 'password'));
    expect((await log.nextChange()).config.password).toBe('two');
  });

  it('reads a burst of writes once', async () => {
    const dir = join(root, 'plain');
    await writeFiles(dir, { host: 'db', user: 'app', dbname: 'app', password: 'p0' });
    const { log } = await startWatching(new SecretDirectorySource(dir), 50);
    // All in one tick: no file event can be handled before the last write.
    for (let i = 1; i <= 20; i++) writeFileSync(join(dir, 'password'), `p${i}`);
    expect((await log.nextChange()).config.password).toBe('p20');
    await writeFile(join(dir, 'password'), 'marker');
    expect((await log.nextChange()).config.password).toBe('marker');
  });

  it('a DSN file: in-place, rename-over, deletion and re-creation', async () => {
    const file = join(root, 'dsn', 'db.conf');
    await mkdir(join(root, 'dsn'));
    await writeFile(file, formatKeyValueDsn(config('one')));
    const { log } = await startWatching(new DsnFileSource(file));
    await writeFile(file, formatKeyValueDsn(config('two')));
    expect((await log.changeWhere((c) => c.config.password === 'two')).change.config.password).toBe('two');
    await writeFile(`${file}.tmp`, formatKeyValueDsn(config('three')));
    await rename(`${file}.tmp`, file);
    expect((await log.changeWhere((c) => c.config.password === 'three')).change).toBeDefined();
    await rm(file);
    expect((await log.nextError()).code).toBe('missing'); // deleting one file is atomic
    await writeFile(`${file}.tmp`, formatKeyValueDsn(config('four')));
    await rename(`${file}.tmp`, file);
    expect((await log.nextChange()).config.password).toBe('four');
  });

  it('a DSN file inside a kubelet volume follows the ..data swap', async () => {
    const dir = join(root, 'vol');
    await writeSecretAtomically(dir, { 'dsn.txt': formatKeyValueDsn(config('one')) });
    const { log } = await startWatching(createSource({ dsnFile: join(dir, 'dsn.txt') }));
    await writeSecretAtomically(dir, { 'dsn.txt': formatKeyValueDsn(config('two')) });
    expect((await log.nextChange()).config.password).toBe('two');
  });

  it('merged directories: a change in either directory', async () => {
    const configMap = join(root, 'cm');
    const secret = join(root, 'secret');
    await writeSecretAtomically(configMap, { hostname: 'db', port: '5432', database: 'app' });
    await writeSecretAtomically(secret, { username: 'app', password: 'one' });
    const { log } = await startWatching(new MergedDirectoriesSource([configMap, secret]));
    await writeSecretAtomically(secret, { username: 'app', password: 'two' });
    expect((await log.nextChange()).config.password).toBe('two');
    await writeSecretAtomically(configMap, { hostname: 'db2', port: '5432', database: 'app' });
    expect((await log.nextChange()).config.host).toBe('db2');
  });

  it('libpq environment: the password file is watched', async () => {
    const passfile = join(root, 'home', '.pgpass');
    await mkdir(join(root, 'home'));
    await writeFile(passfile, '*:*:*:*:one\n', { mode: 0o600 });
    const env = { PGHOST: 'db', PGUSER: 'app', PGDATABASE: 'app', PGPASSFILE: passfile };
    const { log, initial } = await startWatching(new LibpqEnvironmentSource(env));
    expect(initial.password).toBe('one');
    await writeFile(`${passfile}.new`, '*:*:*:*:two\n', { mode: 0o600 });
    await rename(`${passfile}.new`, passfile);
    expect((await log.nextChange()).config.password).toBe('two');
  });
});

describe('SourceWatcher lifecycle', () => {
  it('start() rejects with the SourceError of an invalid source and watches nothing', async () => {
    const handlesBefore = watchHandleCount();
    const watcher = new SourceWatcher(new SecretDirectorySource(join(root, 'absent')));
    await expect(watcher.start()).rejects.toMatchObject({ name: 'SourceError', code: 'missing' });
    expect(watchHandleCount()).toBe(handlesBefore);
  });

  it('keepWatchingOnStartError: start() rejects, then the source appearing is a change from nothing', async () => {
    const dir = join(root, 'secret');
    const watcher = new SourceWatcher(new SecretDirectorySource(dir), { keepWatchingOnStartError: true });
    watchers.push(watcher);
    const log = new EventLog(watcher);
    await expect(watcher.start()).rejects.toMatchObject({ name: 'SourceError', code: 'missing' });
    await writeSecretAtomically(dir, toSecretFiles(config('late')));
    // The folder may be read half-made first (an 'incomplete' error): the change follows.
    let event = await log.next();
    while (event.type === 'error') event = await log.next();
    const change = event.change;
    expect(change.config.password).toBe('late');
    expect(change.previousFingerprint).toBeUndefined();
    expect(watcher.current?.password).toBe('late');
  });

  it('reread() reads a source whose change made no file event', async () => {
    const env: NodeJS.ProcessEnv = {
      PGHOST: 'db',
      PGUSER: 'app',
      PGDATABASE: 'app',
      PGPASSWORD: 'one',
      PGPASSFILE: join(root, 'pgpass'),
    };
    const { watcher, log } = await startWatching(new LibpqEnvironmentSource(env));
    env.PGPASSWORD = 'two'; // an environment object: no file changes
    watcher.reread();
    expect((await log.nextChange()).config.password).toBe('two');
  });

  it('persistent: false: the file watches do not keep the process alive (they are not active handles)', async () => {
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('one')));
    const handlesBefore = watchHandleCount();
    const watcher = new SourceWatcher(new SecretDirectorySource(dir), { persistent: false });
    watchers.push(watcher);
    const log = new EventLog(watcher);
    await watcher.start();
    expect(watchHandleCount()).toBe(handlesBefore);
    await writeSecretAtomically(dir, toSecretFiles(config('two')));
    expect((await log.nextChange()).config.password).toBe('two'); // and still watching
  });

  it('close() leaves no handle or timer: a process that closed its watcher exits by itself', async () => {
    const script = fileURLToPath(new URL('./fixtures/watch-then-close.ts', import.meta.url));
    const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', script], {
      timeout: 30_000,
    });
    const active: string[] = JSON.parse(stdout.trim().split('\n').pop()!);
    // In-flight fs requests (FSReq*) finish on their own; handles and timers would not.
    expect(active.filter((kind) => !kind.startsWith('FSReq'))).toEqual([]);
  });

  it('close() stops all events and closes every fs watcher', async () => {
    const dir = join(root, 'secret');
    const witnessDir = join(root, 'witness');
    await writeSecretAtomically(dir, toSecretFiles(config('one')));
    await writeSecretAtomically(witnessDir, toSecretFiles(config('w-one')));
    // Witnesses on another directory: a change written there after the writes below
    // reaches them through the same pipeline a closed watcher would have used (file
    // event, debounce, read; and the periodic resync), so once both saw it, any event of
    // the closed watcher would have come.
    const byEvents = await startWatching(new SecretDirectorySource(witnessDir));
    const byResync = new SourceWatcher(new SecretDirectorySource(witnessDir), {
      watchMode: 'none',
      resyncIntervalMillis: 20,
    });
    watchers.push(byResync);
    const byResyncLog = new EventLog(byResync);
    await byResync.start();
    const handlesBefore = watchHandleCount();
    const watcher = new SourceWatcher(new SecretDirectorySource(dir), { resyncIntervalMillis: 20 });
    const log = new EventLog(watcher);
    await watcher.start();
    expect(watchHandleCount()).toBeGreaterThan(handlesBefore);
    await writeSecretAtomically(dir, toSecretFiles(config('two'))); // an event may be in flight
    await watcher.close();
    await watcher.close(); // idempotent
    expect(watchHandleCount()).toBe(handlesBefore);
    const seen = log.events.length;
    await writeSecretAtomically(dir, toSecretFiles(config('three')));
    await writeSecretAtomically(dir, toSecretFiles(config('four')));
    await writeSecretAtomically(witnessDir, toSecretFiles(config('w-two')));
    expect((await byEvents.log.nextChange()).config.password).toBe('w-two');
    expect((await byResyncLog.nextChange()).config.password).toBe('w-two');
    expect(log.events.length).toBe(seen);
    expect(log.events.every((e) => e.type !== 'change' || e.change.config.password === 'two')).toBe(true);
  });

  it('close() during start() settles start() (it used to wait forever for chokidar) and leaves no watcher', async () => {
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('one')));
    const handlesBefore = watchHandleCount();
    const watcher = new SourceWatcher(new SecretDirectorySource(dir));
    const started = expect(watcher.start()).rejects.toThrow('SourceWatcher is closed');
    await watcher.close();
    await started;
    expect(watcher.current).toBeUndefined();
    expect(watchHandleCount()).toBe(handlesBefore);
  });

  it('without an error listener, an invalid source does not throw', async () => {
    const dir = join(root, 'secret');
    await writeSecretAtomically(dir, toSecretFiles(config('one')));
    const watcher = new SourceWatcher(new SecretDirectorySource(dir));
    watchers.push(watcher);
    const changes: string[] = [];
    watcher.on('change', (c) => changes.push(c.config.password ?? ''));
    await watcher.start();
    const changed = new Promise<void>((resolve) => watcher.once('change', () => resolve()));
    await writeSecretAtomically(dir, { hostname: 'broken' });
    await writeSecretAtomically(dir, toSecretFiles(config('two')));
    await changed;
    expect(changes).toEqual(['two']);
  });
});
