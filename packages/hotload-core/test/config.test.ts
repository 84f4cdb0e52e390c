import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  ConnectionConfig,
  formatKeyValueDsn,
  formatUriDsn,
  isSourceError,
  REDACTED,
  SourceError,
  toSecretFiles,
} from '../src/index.js';

const SECRET = 'pa55-VERY-secret';

describe('ConnectionConfig', () => {
  it('normalizes host/port and defaults the port to 5432', () => {
    const c = ConnectionConfig.create({ host: 'db', user: 'app', database: 'appdb' });
    expect(c.host).toBe('db');
    expect(c.port).toBe(5432);
    expect(c.hosts).toEqual([{ host: 'db', port: 5432 }]);
    expect(c.password).toBeUndefined();
  });

  it('accepts a host list', () => {
    const c = ConnectionConfig.create({
      hosts: [{ host: 'a', port: 1 }, { host: 'b' }],
      user: 'u',
      database: 'd',
    });
    expect(c.hosts).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 5432 },
    ]);
  });

  it.each([
    [{ user: 'u', database: 'd' }, 'incomplete', 'host'],
    [{ host: 'h', user: '', database: 'd' }, 'incomplete', 'user'],
    [{ host: 'h', user: 'u', database: '' }, 'incomplete', 'dbname'],
    [{ host: 'h', port: 0, user: 'u', database: 'd' }, 'invalid-value', 'port'],
    [{ host: 'h', port: 70000, user: 'u', database: 'd' }, 'invalid-value', 'port'],
    [{ host: 'h', port: 1.5, user: 'u', database: 'd' }, 'invalid-value', 'port'],
    [{ host: 'h h', user: 'u', database: 'd' }, 'invalid-value', 'host'],
    [{ host: 'h', user: 'u\nx', database: 'd' }, 'invalid-value', 'user'],
    [{ host: 'h', user: 'u', database: 'd', password: 'a\u0000b' }, 'invalid-value', 'password'],
    [{ host: 'h', user: 'u', database: 'd', sslmode: 'sometimes' }, 'invalid-value', 'sslmode'],
    [
      { host: 'h', user: 'u', database: 'd', params: { sslnegotiation: 'fast' } },
      'invalid-value',
      'sslnegotiation',
    ],
    // libpq: direct TLS only with an sslmode that always uses TLS (pg 8.23 refuses it without TLS).
    [
      { host: 'h', user: 'u', database: 'd', params: { sslnegotiation: 'direct' } },
      'invalid-value',
      'sslnegotiation',
    ],
    [
      { host: 'h', user: 'u', database: 'd', sslmode: 'prefer', params: { sslnegotiation: 'direct' } },
      'invalid-value',
      'sslnegotiation',
    ],
  ])('rejects %j', (init, code, key) => {
    const result = ConnectionConfig.tryCreate(init as never);
    expect(Array.isArray(result)).toBe(true);
    expect(result).toContainEqual(expect.objectContaining({ code, key }));
    expect(() => ConnectionConfig.create(init as never)).toThrow(SourceError);
  });

  it('rejects unknown parameters and secrets in params', () => {
    expect(
      ConnectionConfig.tryCreate({ host: 'h', user: 'u', database: 'd', params: { nonsense: 'x' } }),
    ).toContainEqual(expect.objectContaining({ key: 'params' }));
    expect(
      ConnectionConfig.tryCreate({ host: 'h', user: 'u', database: 'd', params: { password: 'x' } }),
    ).toContainEqual(expect.objectContaining({ key: 'password' }));
    expect(
      ConnectionConfig.tryCreate({ host: 'h', user: 'u', database: 'd', params: { sslpassword: 'x' } }),
    ).toContainEqual(expect.objectContaining({ key: 'sslpassword' }));
  });

  it('never shows secrets in toString, JSON, inspect or errors', () => {
    const c = ConnectionConfig.create({
      host: 'db',
      user: 'app',
      password: SECRET,
      database: 'appdb',
      sslmode: 'verify-full',
      params: { sslrootcert: '/etc/ca.crt' },
      secretParams: { sslpassword: `KEY-${SECRET}`, oauth_client_secret: `OAUTH-${SECRET}` },
    });
    for (const text of [
      String(c),
      `${c}`,
      JSON.stringify(c),
      JSON.stringify({ nested: [c] }),
      inspect(c),
      inspect({ c }, { depth: 10, showHidden: true }),
      Object.keys(c).join(','),
    ]) {
      expect(text).not.toContain(SECRET);
    }
    expect(String(c)).toBe(`postgres://app:${REDACTED}@db:5432/appdb?sslmode=verify-full`);
    expect(JSON.parse(JSON.stringify(c)).password).toBe(REDACTED);
    expect(c.password).toBe(SECRET); // readable on purpose
    expect(c.secretParams.sslpassword).toBe(`KEY-${SECRET}`);
    expect(c.params).toEqual({ sslrootcert: '/etc/ca.crt' });
  });

  it('fingerprints every field, secrets included', () => {
    const a = ConnectionConfig.create({ host: 'db', user: 'app', password: 'one', database: 'x' });
    const b = ConnectionConfig.create({ host: 'db', user: 'app', password: 'one', database: 'x' });
    const c = a.with({ password: 'two' });
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(a.equals(b)).toBe(true);
    expect(c.fingerprint).not.toBe(a.fingerprint);
    expect(a.with({ port: 5433 }).fingerprint).not.toBe(a.fingerprint);
    expect(a.with({ params: { application_name: 'x' } }).fingerprint).not.toBe(a.fingerprint);
    expect(a.with({ password: undefined }).password).toBeUndefined();
    expect(a.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it('formats the db-controller secret files consistently', () => {
    const c = ConnectionConfig.create({
      host: 'db.example',
      port: 6543,
      user: 'app_a',
      password: "it's a \\ p@ss",
      database: 'app',
      sslmode: 'require',
    });
    const files = toSecretFiles(c);
    expect(files).toMatchObject({
      hostname: 'db.example',
      port: '6543',
      username: 'app_a',
      password: "it's a \\ p@ss",
      database: 'app',
      sslmode: 'require',
    });
    expect(files['dsn.txt']).toBe(formatKeyValueDsn(c));
    expect(formatKeyValueDsn(c)).toBe(
      "host=db.example port=6543 user=app_a password='it\\'s a \\\\ p@ss' dbname=app sslmode=require",
    );
    expect(formatUriDsn(c)).toBe(
      "postgres://app_a:it's%20a%20%5C%20p%40ss@db.example:6543/app?sslmode=require",
    );
  });
});

describe('SourceError', () => {
  it('is typed, names file and field, and serializes without secrets', () => {
    const e = new SourceError({
      code: 'malformed',
      source: 'secret-dir /x',
      file: '/x/port',
      key: 'port',
      problem: 'not a number',
    });
    expect(e).toBeInstanceOf(Error);
    expect(isSourceError(e)).toBe(true);
    expect(e.message).toBe('secret-dir /x: malformed in /x/port [port]: not a number');
    expect(JSON.parse(JSON.stringify(e))).toMatchObject({
      code: 'malformed',
      file: '/x/port',
      key: 'port',
    });
    expect(inspect(e)).toContain('malformed');
  });

  it('create() errors list fields, not values', () => {
    try {
      ConnectionConfig.create({ host: 'h', user: 'u', database: 'd', password: `${SECRET}\u0000` });
      expect.unreachable();
    } catch (error) {
      expect(isSourceError(error)).toBe(true);
      expect(String(error)).not.toContain(SECRET);
      expect((error as SourceError).key).toBe('password');
    }
  });
});
