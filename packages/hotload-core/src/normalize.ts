import { isAbsolute, resolve } from 'node:path';
import { ConnectionConfig } from './config.js';
import { SourceError } from './errors.js';
import { FILE_KEYWORDS, isSslMode, LIBPQ_KEYWORDS, SECRET_KEYWORDS, type SslMode } from './params.js';

/** Raw libpq keyword → value pairs gathered by a source, with the file each came from. */
export interface RawParams {
  readonly params: Readonly<Record<string, string>>;
  /** keyword → the file (or environment variable) it was read from, for error messages. */
  readonly origins: Readonly<Record<string, string>>;
}

export interface NormalizeContext {
  /** The source's description, for error messages. */
  readonly source: string;
  /** Relative file parameters (`sslrootcert=ca.crt`) are resolved against it. */
  readonly baseDir?: string | undefined;
  /** Says where a required key could have come from, for `incomplete` errors. */
  readonly missingHint?: ((key: 'host' | 'user' | 'dbname') => string) | undefined;
  /** The file to name when a problem has no better origin. */
  readonly defaultFile?: string | undefined;
}

/**
 * Turns raw keyword → value pairs into a validated {@link ConnectionConfig}, or the first
 * problem as a {@link SourceError}. The same rules for every source:
 *
 * - only libpq keywords (plus pg's `ssl`, `uselibpqcompat`) are accepted;
 * - an empty value counts as not given (as in libpq);
 * - `host` may be a comma-separated list; `port` a single port for all hosts or one per
 *   host (an empty entry means 5432); each port is 1-65535, digits only;
 * - `host`, `user` and `dbname` are required (`incomplete` otherwise);
 * - file parameters (`sslrootcert`, `sslcert`, `sslkey`, `sslcrl`, `passfile` ...) are
 *   resolved against the source's directory when relative.
 */
export function normalizeParams(raw: RawParams, context: NormalizeContext): ConnectionConfig | SourceError {
  const { source } = context;
  const fileOf = (key: string) => raw.origins[key] ?? context.defaultFile;
  const error = (code: SourceError['code'], key: string | undefined, problem: string, file?: string) =>
    new SourceError({ code, source, key, problem, file: file ?? (key ? fileOf(key) : context.defaultFile) });

  const params: Record<string, string> = {};
  const secretParams: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw.params)) {
    if (!LIBPQ_KEYWORDS.has(key)) {
      // Not named: an unknown "keyword" may be a piece of a mangled password.
      return error('malformed', undefined, 'unknown connection parameter', raw.origins[key]);
    }
    if (value === '') continue;
    if (value.includes('\u0000')) return error('malformed', key, 'contains NUL bytes');
    if (['host', 'port', 'user', 'password', 'dbname', 'sslmode'].includes(key)) continue;
    if (SECRET_KEYWORDS.has(key)) secretParams[key] = value;
    else if (FILE_KEYWORDS.has(key) && context.baseDir && !isAbsolute(value))
      params[key] = resolve(context.baseDir, value);
    else params[key] = value;
  }

  const get = (key: string) => (raw.params[key] === '' ? undefined : raw.params[key]);
  const hostText = get('host');
  const hostNames = hostText === undefined ? [] : hostText.split(',');
  if (hostNames.some((h) => h.trim() === ''))
    return error('invalid-value', 'host', 'empty entry in the host list');
  const portText = get('port');
  const portEntries = portText === undefined ? [] : portText.split(',');
  if (portEntries.length > 1 && portEntries.length !== hostNames.length) {
    return error('invalid-value', 'port', 'the number of ports does not match the number of hosts');
  }
  const ports: number[] = [];
  for (const entry of portEntries) {
    const trimmed = entry.trim();
    if (trimmed === '') ports.push(5432);
    else if (!/^\d{1,5}$/.test(trimmed) || Number(trimmed) < 1 || Number(trimmed) > 65535) {
      return error('invalid-value', 'port', 'not a port number (1-65535)');
    } else ports.push(Number(trimmed));
  }
  const hosts = hostNames.map((host, i) => ({
    host: host.trim(),
    port: ports.length === 1 ? ports[0] : ports[i],
  }));

  const sslmode = get('sslmode');
  if (sslmode !== undefined && !isSslMode(sslmode))
    return error('invalid-value', 'sslmode', 'unknown sslmode');

  for (const key of ['host', 'user', 'dbname'] as const) {
    if (get(key) === undefined) {
      const hint = context.missingHint?.(key);
      return error('incomplete', key, hint ? `no ${key}: ${hint}` : `no ${key}`, context.defaultFile);
    }
  }

  const result = ConnectionConfig.tryCreate({
    hosts,
    user: get('user')!,
    password: get('password'),
    database: get('dbname')!,
    sslmode: sslmode as SslMode | undefined,
    params,
    secretParams,
  });
  if (result instanceof ConnectionConfig) return result;
  const first = result[0]!;
  return error(first.code, first.key, first.problem);
}
