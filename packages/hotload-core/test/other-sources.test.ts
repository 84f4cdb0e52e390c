import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ConnectionConfig,
  type ConnectionSource,
  createSource,
  DsnFileSource,
  LibpqEnvironmentSource,
  lookupPgpass,
  MergedDirectoriesSource,
  SecretDirectorySource,
  SourceWatcher,
} from '../src/index.js';
import { tempDir } from './helpers.js';
import { sourceError, writeFiles } from './sources.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => {
  ({ dir, cleanup } = await tempDir('hotload-sources-'));
});
afterEach(async () => cleanup());

const SECRET = 'Another-Secret-42';

describe('DsnFileSource', () => {
  it('reads a key/value DSN file', async () => {
    const file = join(dir, 'db.dsn');
    await writeFile(file, `host=db port=6000 user=app password='${SECRET}' dbname=x sslmode=verify-full\n`);
    const source = new DsnFileSource(file);
    expect(source.watchPaths).toEqual([dir]);
    const c = await source.read();
    expect([c.host, c.port, c.user, c.password, c.database, c.sslmode]).toEqual([
      'db',
      6000,
      'app',
      SECRET,
      'x',
      'verify-full',
    ]);
  });

  it('reads a URI DSN file with a host list and relative SSL files', async () => {
    const file = join(dir, 'uri');
    await writeFile(
      file,
      `postgresql://app:${SECRET}@a:1,b:2/x?sslrootcert=ca.pem&target_session_attrs=read-write`,
    );
    const c = await createSource({ dsnFile: file }).read();
    expect(c.hosts).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 2 },
    ]);
    expect(c.params).toEqual({ sslrootcert: join(dir, 'ca.pem'), target_session_attrs: 'read-write' });
  });

  it.each([
    ['', 'empty'],
    ['\n  \n', 'empty'],
    [`host=db user=app password='${SECRET}`, 'malformed'],
    [`postgres://app:${SECRET}@db:notaport/x`, 'malformed'],
    [`host=db user=app password=${SECRET}`, 'incomplete'],
    [`host=db port=${SECRET} user=app dbname=x`, 'invalid-value'],
    [`just-a-word-${SECRET}`, 'malformed'],
  ])('rejects %j as %s without the value', async (content, code) => {
    const file = join(dir, 'dsn');
    await writeFile(file, content);
    const e = await sourceError(new DsnFileSource(file).read());
    expect(e.code).toBe(code);
    expect(e.file).toBe(file);
    expect(`${e.message} ${JSON.stringify(e)}`).not.toContain(SECRET);
  });

  it('a missing file is `missing`', async () => {
    const e = await sourceError(new DsnFileSource(join(dir, 'none')).read());
    expect([e.code, e.errno]).toEqual(['missing', 'ENOENT']);
  });
});

describe('MergedDirectoriesSource', () => {
  it('takes host/port from a ConfigMap mount and user/password from a Secret mount', async () => {
    const configMap = join(dir, 'config');
    const secret = join(dir, 'secret');
    await writeFiles(configMap, { hostname: 'db', port: '5433', database: 'app', application_name: 'svc' });
    await writeFiles(secret, { username: 'app_a', password: SECRET });
    const source = createSource({ directories: [configMap, secret] });
    expect(source.kind).toBe('merged-directories');
    expect(source.watchPaths).toEqual([configMap, secret]);
    const c = await source.read();
    expect([c.host, c.port, c.user, c.password, c.database, c.params.application_name]).toEqual([
      'db',
      5433,
      'app_a',
      SECRET,
      'app',
      'svc',
    ]);
  });

  it('a later directory wins per key, including keys from its DSN', async () => {
    const first = join(dir, 'a');
    const second = join(dir, 'b');
    await writeFiles(first, { hostname: 'first-host', port: '1', username: 'first-user', database: 'db' });
    await writeFiles(second, { hostname: 'second-host', 'dsn.txt': 'user=dsn-user' });
    const c = await new MergedDirectoriesSource([first, second]).read();
    expect([c.host, c.port, c.user, c.database]).toEqual(['second-host', 1, 'dsn-user', 'db']);
    const reversed = await new MergedDirectoriesSource([second, first]).read();
    expect([reversed.host, reversed.user]).toEqual(['first-host', 'first-user']);
  });

  it('requires every directory, and required fields on the merged result', async () => {
    const only = join(dir, 'only');
    await writeFiles(only, { hostname: 'h' });
    const missing = await sourceError(new MergedDirectoriesSource([only, join(dir, 'gone')]).read());
    expect([missing.code, missing.file]).toEqual(['missing', join(dir, 'gone')]);
    const incomplete = await sourceError(new MergedDirectoriesSource([only]).read());
    expect([incomplete.code, incomplete.key]).toEqual(['incomplete', 'user']);
  });

  it('a SecretDirectorySource is the one-directory case', async () => {
    await writeFiles(dir, { hostname: 'h', username: 'u', database: 'd' });
    const single = await new SecretDirectorySource(dir).read();
    const merged = await new MergedDirectoriesSource([dir]).read();
    expect(single.fingerprint).toBe(merged.fingerprint);
  });
});

describe('LibpqEnvironmentSource', () => {
  const baseEnv = { PGHOST: 'db', PGPORT: '6432', PGUSER: 'app', PGDATABASE: 'appdb', PGSSLMODE: 'require' };

  it('reads PGHOST, PGPORT, PGUSER, PGDATABASE, PGSSLMODE, PGPASSWORD and others', async () => {
    const source = createSource({
      libpqEnv: true,
      env: { ...baseEnv, PGPASSWORD: SECRET, PGAPPNAME: 'svc', HOME: dir },
    });
    const c = await source.read();
    expect([c.host, c.port, c.user, c.database, c.sslmode, c.password]).toEqual([
      'db',
      6432,
      'app',
      'appdb',
      'require',
      SECRET,
    ]);
    expect(c.params).toEqual({ application_name: 'svc' });
    expect(source.watchPaths).toEqual([dir]);
  });

  it('looks the password up in PGPASSFILE by host, port, database and user', async () => {
    const passfile = join(dir, 'pgpass');
    await writeFile(
      passfile,
      [
        '# comment',
        'otherhost:*:*:*:wrong1',
        'db:6432:otherdb:app:wrong2',
        `db:6432:appdb:app:${SECRET}`,
        'db:*:*:*:wrong3',
      ].join('\n'),
      { mode: 0o600 },
    );
    const source = new LibpqEnvironmentSource({ ...baseEnv, PGPASSFILE: passfile });
    expect(source.watchPaths).toEqual([dir]);
    expect((await source.read()).password).toBe(SECRET);
  });

  it('uses $HOME/.pgpass by default, PGPASSWORD first, and no password without a match or a file', async () => {
    await writeFile(join(dir, '.pgpass'), '*:*:*:app:from-home\n', { mode: 0o600 });
    expect((await new LibpqEnvironmentSource({ ...baseEnv, HOME: dir }).read()).password).toBe('from-home');
    expect(
      (await new LibpqEnvironmentSource({ ...baseEnv, HOME: dir, PGPASSWORD: 'env' }).read()).password,
    ).toBe('env');
    expect(
      (await new LibpqEnvironmentSource({ ...baseEnv, HOME: dir, PGUSER: 'other' }).read()).password,
    ).toBeUndefined();
    expect(
      (await new LibpqEnvironmentSource({ ...baseEnv, PGPASSFILE: join(dir, 'absent') }).read()).password,
    ).toBeUndefined();
  });

  it('refuses a password file with group or world access, as libpq does', async () => {
    const passfile = join(dir, 'pgpass');
    await writeFile(passfile, `*:*:*:*:${SECRET}\n`);
    await chmod(passfile, 0o644);
    const e = await sourceError(new LibpqEnvironmentSource({ ...baseEnv, PGPASSFILE: passfile }).read());
    expect([e.code, e.file, e.key]).toEqual(['unreadable', passfile, 'passfile']);
    expect(e.message).not.toContain(SECRET);
  });

  it('refuses a password file that is a directory', async () => {
    await mkdir(join(dir, 'pgpass'));
    const e = await sourceError(
      new LibpqEnvironmentSource({ ...baseEnv, PGPASSFILE: join(dir, 'pgpass') }).read(),
    );
    expect(e.code).toBe('unreadable');
  });

  it('names the environment variable in errors', async () => {
    const e = await sourceError(new LibpqEnvironmentSource({ ...baseEnv, PGPORT: `x${SECRET}` }).read());
    expect([e.code, e.file, e.key]).toEqual(['invalid-value', '$PGPORT', 'port']);
    expect(e.message).not.toContain(SECRET);
    const incomplete = await sourceError(new LibpqEnvironmentSource({ PGHOST: 'h', PGUSER: 'u' }).read());
    expect([incomplete.code, incomplete.key]).toEqual(['incomplete', 'dbname']);
    expect(incomplete.message).toContain('PGDATABASE is not set');
  });
});

describe('lookupPgpass', () => {
  const q = { host: 'db', port: 5432, database: 'app', user: 'u' };
  it('handles escapes, colons in passwords, CRLF and socket hosts', () => {
    expect(lookupPgpass('db:5432:app:u:pa\\:ss:with:colons\r\n', q)).toBe('pa:ss:with:colons');
    expect(lookupPgpass('d\\b:*:*:*:x', q)).toBe('x');
    expect(lookupPgpass('db\\:5432:*:*:x', q)).toBeUndefined();
    expect(lookupPgpass('localhost:*:*:*:sock', { ...q, host: '/var/run/postgresql' })).toBe('sock');
    expect(lookupPgpass('db:5432:app', q)).toBeUndefined();
    expect(lookupPgpass('*:*:*:*:first\n*:*:*:*:second', q)).toBe('first');
  });
});

describe('a custom ConnectionSource', () => {
  it('names its own kind (SourceKind is open) and is watched as any source', async () => {
    // Compiles only because SourceKind takes a custom name: no built-in kind borrowed.
    const vault: ConnectionSource = {
      kind: 'vault',
      description: 'vault:database/creds/app',
      watchPaths: [],
      read: async () =>
        ConnectionConfig.create({ host: 'db', port: 5432, user: 'app', password: SECRET, database: 'x' }),
    };
    expect(createSource(vault)).toBe(vault);
    const watcher = new SourceWatcher(vault, { watchMode: 'none', resyncIntervalMillis: 0 });
    try {
      expect((await watcher.start()).user).toBe('app');
      expect(watcher.source.kind).toBe('vault');
    } finally {
      await watcher.close();
    }
  });
});
