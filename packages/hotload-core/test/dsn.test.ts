import { describe, expect, it } from 'vitest';
import { isUriDsn, parseDsn, parseKeyValueDsn, parseUriDsn } from '../src/index.js';

const params = (text: string) => {
  const result = parseDsn(text);
  if ('problem' in result) throw new Error(`unexpected problem: ${result.problem}`);
  return result.params;
};
const problem = (text: string) => {
  const result = parseDsn(text);
  if (!('problem' in result)) throw new Error('expected a problem');
  return result.problem;
};

describe('libpq key/value DSNs', () => {
  it('reads plain pairs, spaces around =, and the last of duplicate keys', () => {
    expect(params('host=db port=5432  user = app dbname=appdb\n')).toEqual({
      host: 'db',
      port: '5432',
      user: 'app',
      dbname: 'appdb',
    });
    expect(params('user=a user=b')).toEqual({ user: 'b' });
  });

  it('follows libpq quoting: single quotes, backslash escapes in and out of quotes', () => {
    expect(params("password='it\\'s a secret' user=a\\ b options='-c search_path=x'")).toEqual({
      password: "it's a secret",
      user: 'a b',
      options: '-c search_path=x',
    });
    expect(params("password='back\\\\slash'")).toEqual({ password: 'back\\slash' });
    expect(params("password=''")).toEqual({ password: '' });
    expect(params('password=tail\\')).toEqual({ password: 'tail' });
  });

  it.each([
    ["password='s3cr3tval", /unterminated/],
    ['=value', /missing keyword/],
    ['host', /missing "="/],
    ['host db', /missing "="/],
    ['   ', /empty/],
    ['mysql://x', /unsupported URI scheme/],
  ])('reports %j without echoing it', (text, expected) => {
    const p = problem(text);
    expect(p).toMatch(expected);
    for (const word of text.split(/[\s=']+/).filter((w) => w.length > 2)) expect(p).not.toContain(word);
  });

  it('parseKeyValueDsn is exported for direct use', () => {
    expect(parseKeyValueDsn('a=b')).toEqual({ params: { a: 'b' } });
  });
});

describe('URI DSNs (pg-connection-string, extended)', () => {
  it('reads a db-controller style URI', () => {
    expect(isUriDsn('postgres://x@h/d')).toBe(true);
    expect(isUriDsn('postgresql://x@h/d')).toBe(true);
    expect(isUriDsn('host=h')).toBe(false);
    expect(params('postgres://app_a:s%40cret@db.example:6543/app?sslmode=require\n')).toEqual({
      user: 'app_a',
      password: 's@cret',
      host: 'db.example',
      port: '6543',
      dbname: 'app',
      sslmode: 'require',
    });
  });

  it('passes SSL parameters through as strings without reading files', () => {
    expect(
      params('postgresql://u@h/d?sslmode=verify-ca&sslrootcert=/does/not/exist.crt&application_name=svc'),
    ).toEqual({
      user: 'u',
      host: 'h',
      dbname: 'd',
      sslmode: 'verify-ca',
      sslrootcert: '/does/not/exist.crt',
      application_name: 'svc',
    });
  });

  it('supports multi-host URIs and IPv6 literals', () => {
    expect(params('postgres://u:p@h1:5433,[::1]:5434,h3/d')).toMatchObject({
      host: 'h1,::1,h3',
      port: '5433,5434,',
      user: 'u',
      password: 'p',
      dbname: 'd',
    });
    expect(params('postgres://u@[::1]:5433/d')).toMatchObject({ host: '::1', port: '5433' });
  });

  it('supports a host query parameter (Unix socket) and an empty host', () => {
    expect(params('postgres://u@/d?host=/var/run/postgresql')).toMatchObject({ host: '/var/run/postgresql' });
    expect(params('postgres://u@/d')).not.toHaveProperty('host');
  });

  it('reports a bad port without the parser message or the input', () => {
    const p = problem('postgres://user:hunter2@h:abc/d');
    expect(p).toMatch(/malformed URI/);
    expect(p).not.toContain('hunter2');
    expect(parseUriDsn('postgres://u@h1,h2:x/d')).toEqual({ problem: 'malformed host list in URI' });
  });
});
