import { execFile } from 'node:child_process';
import { chmod, lstat, mkdir, symlink, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspect, promisify } from 'node:util';
import { unprivilegedUser } from 'hotload-test-support';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ConnectionConfig,
  createSource,
  type FileReadMode,
  SecretDirectorySource,
  toSecretFiles,
  writeSecretAtomically,
} from '../src/index.js';
import { secretVersion } from './fixtures/secret-versions.js';
import { tempDir } from './helpers.js';
import { sourceError, writeFiles } from './sources.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('hotload-secretdir-'));
});
afterEach(async () => cleanup());

const SECRET = 'Sup3r-Secret-Value';
const execFileAsync = promisify(execFile);
const read = () => new SecretDirectorySource(dir).read();

describe('SecretDirectorySource: key names', () => {
  it('reads the database controller names (hostname, username, database)', async () => {
    await writeFiles(dir, {
      hostname: 'db.example',
      port: '6543',
      username: 'app_a',
      password: SECRET,
      database: 'appdb',
      sslmode: 'require',
    });
    const c = await read();
    expect(c.toJSON()).toMatchObject({
      hosts: [{ host: 'db.example', port: 6543 }],
      user: 'app_a',
      database: 'appdb',
      sslmode: 'require',
    });
    expect(c.password).toBe(SECRET);
  });

  it('reads the libpq names (host, user, dbname)', async () => {
    await writeFiles(dir, { host: 'h', user: 'u', dbname: 'd' });
    const c = await read();
    expect([c.host, c.port, c.user, c.database, c.password]).toEqual(['h', 5432, 'u', 'd', undefined]);
  });

  it.each([
    ['host', 'hostname'],
    ['user', 'username'],
    ['dbname', 'database'],
  ])('the libpq name %s wins over the controller name %s', async (libpq, controller) => {
    const files: Record<string, string> = { host: 'h', user: 'u', dbname: 'd' };
    files[controller] = 'from-controller-name';
    files[libpq] = 'from-libpq-name';
    await writeFiles(dir, files);
    expect(JSON.stringify(await read())).toContain('from-libpq-name');
  });

  it('reads dsn.txt alone (key/value) and uri_dsn.txt alone (URI)', async () => {
    await writeFiles(dir, { 'dsn.txt': `host=h1 port=5433 user=u1 password='${SECRET}' dbname=d1\n` });
    let c = await read();
    expect([c.host, c.port, c.user, c.database, c.password]).toEqual(['h1', 5433, 'u1', 'd1', SECRET]);
    await cleanup();
    await writeFiles(dir, { 'uri_dsn.txt': `postgres://u2:${SECRET}@h2:5434/d2?sslmode=disable\n` });
    c = await read();
    expect([c.host, c.port, c.user, c.database, c.password, c.sslmode]).toEqual([
      'h2',
      5434,
      'u2',
      'd2',
      SECRET,
      'disable',
    ]);
  });

  it('reads other libpq keywords from files of that name and resolves relative file paths', async () => {
    await writeFiles(dir, {
      host: 'h',
      user: 'u',
      dbname: 'd',
      application_name: 'svc\n',
      sslrootcert: 'ca.crt',
      'ca.crt': '---',
      'ro_uri_dsn.txt': 'ignored',
    });
    const c = await read();
    expect(c.params).toEqual({ application_name: 'svc', sslrootcert: join(dir, 'ca.crt') });
  });

  it('reads a host list and a port list', async () => {
    await writeFiles(dir, { host: 'a,b', port: '5433,5434', user: 'u', dbname: 'd' });
    expect((await read()).hosts).toEqual([
      { host: 'a', port: 5433 },
      { host: 'b', port: 5434 },
    ]);
  });
});

describe('SecretDirectorySource: precedence', () => {
  it('the DSN is the base and separate key files override it field by field', async () => {
    await writeFiles(dir, {
      'uri_dsn.txt':
        'postgres://dsnuser:dsnpass@dsnhost:1111/dsndb?sslmode=require&application_name=from-dsn',
      password: 'filepass',
      hostname: 'filehost',
    });
    const c = await read();
    expect([c.host, c.port, c.user, c.database, c.password, c.sslmode]).toEqual([
      'filehost',
      1111,
      'dsnuser',
      'dsndb',
      'filepass',
      'require',
    ]);
    expect(c.params.application_name).toBe('from-dsn');
  });

  it('uri_dsn.txt is the base when dsn.txt is also there', async () => {
    await writeFiles(dir, {
      'uri_dsn.txt': 'postgres://u@from-uri/d',
      'dsn.txt': 'host=from-kv user=u dbname=d',
    });
    expect((await read()).host).toBe('from-uri');
  });

  it('a broken dsn.txt is an error even when uri_dsn.txt is fine', async () => {
    await writeFiles(dir, { 'uri_dsn.txt': 'postgres://u@h/d', 'dsn.txt': `password='${SECRET}` });
    const e = await sourceError(read());
    expect(e.code).toBe('malformed');
    expect(e.file).toBe(join(dir, 'dsn.txt'));
    expect(e.message).not.toContain(SECRET);
  });

  it('the controller output (all keys, consistent) reads back as the config it came from', async () => {
    const config = ConnectionConfig.create({
      hosts: [{ host: 'db', port: 5433 }],
      user: 'app_b',
      password: "we'ird \\ p@ss word",
      database: 'app',
      sslmode: 'verify-full',
    });
    await writeSecretAtomically(dir, toSecretFiles(config));
    const back = await createSource({ secretDirectory: dir }).read();
    expect(back.fingerprint).toBe(config.fingerprint);
  });
});

describe('SecretDirectorySource: whitespace', () => {
  it('trims values, but removes only trailing line breaks from the password', async () => {
    await writeFiles(dir, {
      hostname: '  db\n',
      port: '5432\r\n',
      username: 'app\n\n',
      password: '  spaced pass \r\n',
      database: '\tappdb \n',
    });
    const c = await read();
    expect([c.host, c.port, c.user, c.database]).toEqual(['db', 5432, 'app', 'appdb']);
    expect(c.password).toBe('  spaced pass ');
  });
});

describe('SecretDirectorySource: errors name the file and the problem, never the value', () => {
  const valid = { hostname: 'h', username: 'u', database: 'd' };
  it.each([
    ['missing directory', {}, 'missing', ''],
    ['empty password file', { ...valid, password: '\n' }, 'empty', 'password'],
    ['empty hostname file', { ...valid, hostname: ' \n' }, 'empty', 'hostname'],
    ['non-numeric port', { ...valid, port: `5432${SECRET}` }, 'invalid-value', 'port'],
    ['port out of range', { ...valid, port: '70000' }, 'invalid-value', 'port'],
    ['unknown sslmode', { ...valid, sslmode: SECRET }, 'invalid-value', 'sslmode'],
    ['no user', { hostname: 'h', database: 'd', password: SECRET }, 'incomplete', ''],
    ['no host', { username: 'u', database: 'd', password: SECRET }, 'incomplete', ''],
    ['no database', { hostname: 'h', username: 'u', password: SECRET }, 'incomplete', ''],
    ['malformed dsn', { 'dsn.txt': `host=h password='${SECRET}` }, 'malformed', 'dsn.txt'],
    ['unknown DSN keyword', { 'dsn.txt': `host=h ${SECRET}=x` }, 'malformed', 'dsn.txt'],
    ['host with a line break inside', { ...valid, hostname: `h\n${SECRET}` }, 'invalid-value', 'hostname'],
  ])('%s', async (_name, files, code, file) => {
    if (_name !== 'missing directory') await writeFiles(dir, files as Record<string, string>);
    const source = new SecretDirectorySource(_name === 'missing directory' ? join(dir, 'nope') : dir);
    const e = await sourceError(source.read());
    expect(e.code).toBe(code);
    expect(e.file).toBe(_name === 'missing directory' ? join(dir, 'nope') : join(dir, file));
    for (const text of [e.message, JSON.stringify(e), inspect(e), String(e), e.stack ?? '']) {
      expect(text).not.toContain(SECRET);
    }
  });

  it('binary content', async () => {
    await writeFiles(dir, { ...valid, password: new Uint8Array([0x41, 0, 0x42]) });
    const e = await sourceError(read());
    expect([e.code, e.file, e.key]).toEqual(['malformed', join(dir, 'password'), 'password']);
  });

  it('invalid UTF-8', async () => {
    await writeFiles(dir, { ...valid, password: new Uint8Array([0xff, 0xfe, 0x41]) });
    expect((await sourceError(read())).code).toBe('malformed');
  });

  it('a file over 1 MiB', async () => {
    await writeFiles(dir, { ...valid, password: 'x'.repeat(1024 * 1024 + 1) });
    const e = await sourceError(read());
    expect([e.code, e.problem]).toEqual(['unreadable', 'larger than 1 MiB']);
  });

  it('a file that keeps growing past what fstat said (/dev/zero: size 0, endless)', async () => {
    // The read buffer is sized by fstat and must grow while data keeps coming, up to the limit.
    await writeFiles(dir, valid);
    await symlink('/dev/zero', join(dir, 'password'));
    const e = await sourceError(read());
    expect([e.code, e.problem, e.key]).toEqual(['unreadable', 'larger than 1 MiB', 'password']);
  });

  it('a directory where a key file should be', async () => {
    await writeFiles(dir, valid);
    await mkdir(join(dir, 'password'));
    const e = await sourceError(read());
    expect([e.code, e.file]).toEqual(['unreadable', join(dir, 'password')]);
  });

  it('a dangling key symlink counts as absent', async () => {
    await writeFiles(dir, valid);
    await symlink(join(dir, 'nowhere'), join(dir, 'password'));
    expect((await read()).password).toBeUndefined();
  });

  it('a file without read permission (read by an unprivileged user when the tests run as root)', async () => {
    await writeFiles(dir, { ...valid, password: SECRET });
    await chmod(join(dir, 'password'), 0);
    // Root reads any file: as root, the read runs in a child process as `nobody`, which
    // may enter the folder and read the other files but not the password.
    const runAs = process.getuid?.() === 0 ? unprivilegedUser() : undefined;
    if (runAs) await chmod(dir, 0o755);
    const script = fileURLToPath(new URL('./fixtures/read-secret-directory.ts', import.meta.url));
    const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', script, dir], {
      timeout: 30_000,
      ...runAs,
    });
    const outcome = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(outcome).toMatchObject({ code: 'unreadable', errno: 'EACCES', file: join(dir, 'password') });
    if (runAs) expect(outcome.uid).toBe(runAs.uid);
  });
});

describe('SecretDirectorySource: kubelet layout', () => {
  it('reads through ..data and names the user-visible file in errors', async () => {
    await writeSecretAtomically(dir, { hostname: 'h', username: 'u', database: 'd', port: 'x' });
    const e = await sourceError(read());
    expect(e.file).toBe(join(dir, 'port'));
    await writeSecretAtomically(dir, { hostname: 'h', username: 'u', database: 'd', port: '1' });
    expect((await read()).port).toBe(1);
  });

  /**
   * Reads in a loop while `swap` swaps versions 1 to VERSIONS-1 in; resolves with the
   * fingerprints read. Only "kept changing" may fail a read, never a mixed config.
   */
  async function readWhileSwapping(fileReads: FileReadMode, swap: () => Promise<unknown>): Promise<string[]> {
    await writeSecretAtomically(dir, toSecretFiles(secretVersion(0)));
    const source = new SecretDirectorySource(dir, { fileReads });
    let stop = false;
    const seen: string[] = [];
    const reader = (async () => {
      while (!stop) {
        try {
          seen.push((await source.read()).fingerprint);
        } catch (error) {
          expect((error as Error).message).toMatch(/kept changing/);
        }
        // A sync read never yields: let the loop turn, so that `stop` can come.
        if (fileReads === 'sync') await new Promise((resolveTurn) => setImmediate(resolveTurn));
      }
    })();
    await swap();
    stop = true;
    await reader;
    return seen;
  }

  const VERSIONS = 40;
  const allowed = new Set(Array.from({ length: VERSIONS }, (_, i) => secretVersion(i).fingerprint));

  it('never mixes two versions while swaps happen during reads (async: swapped in this process between its calls)', async () => {
    const seen = await readWhileSwapping('async', async () => {
      for (let i = 1; i < VERSIONS; i++) await writeSecretAtomically(dir, toSecretFiles(secretVersion(i)));
    });
    expect(seen.length).toBeGreaterThan(0);
    for (const fingerprint of seen) expect(allowed.has(fingerprint)).toBe(true);
  });

  it('never mixes two versions while swaps happen during reads (sync: swapped by another process, as the kubelet does)', async () => {
    const script = fileURLToPath(new URL('./fixtures/write-versions.ts', import.meta.url));
    const seen = await readWhileSwapping('sync', () =>
      execFileAsync(process.execPath, ['--import', 'tsx', script, dir, String(VERSIONS)], {
        timeout: 60_000,
      }),
    );
    expect(seen.length).toBeGreaterThan(0);
    for (const fingerprint of seen) expect(allowed.has(fingerprint)).toBe(true);
  });
});

describe('SecretDirectorySource: when a kubelet volume changed', () => {
  it('dates a version from its ..data swap, not from its files (written before the swap)', async () => {
    await writeSecretAtomically(dir, { host: 'h', user: 'u', dbname: 'd', password: SECRET });
    const anHourAgo = new Date(Date.now() - 3_600_000);
    // The files keep an old mtime, as files written (or synced) well before the swap would.
    for (const name of ['host', 'user', 'dbname', 'password'])
      await utimes(join(dir, name), anHourAgo, anHourAgo);
    const link = await lstat(join(dir, '..data'));
    const snapshot = await new SecretDirectorySource(dir).readSnapshot();
    expect(snapshot.changedAt).toBe(link.mtimeMs);
  });

  it('dates a plain directory from its newest file', async () => {
    await writeFiles(dir, { host: 'h', user: 'u', dbname: 'd' });
    const anHourAgo = new Date(Date.now() - 3_600_000);
    for (const name of ['host', 'user', 'dbname']) await utimes(join(dir, name), anHourAgo, anHourAgo);
    const snapshot = await new SecretDirectorySource(dir).readSnapshot();
    expect(snapshot.changedAt).toBeCloseTo(anHourAgo.getTime(), 0);
  });
});
