import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { SourceError } from 'hotload-core';
import type pg from 'pg';

/**
 * The connection fields hotload-pg reads from a source's config. hotload-core's
 * `ConnectionConfig` has this shape; anything else with it (e.g. built in code) works too.
 */
export interface ConnectionSettings {
  /** The first host (the only one tried when {@link hosts} has fewer than two entries). */
  readonly host: string;
  readonly port: number;
  /**
   * libpq host list (`host=a,b` / `postgres://u@a:5432,b:5433/db`), in order. With two or
   * more, each generation is built on the first host that connects and, with
   * `target_session_attrs=read-write` (or `primary`), accepts writes.
   */
  readonly hosts?: ReadonlyArray<HostPort> | undefined;
  readonly user: string;
  /** Read only when a generation is built; never copied into events or errors. */
  readonly password: string | undefined;
  readonly database: string;
  /** libpq sslmode (`disable`, `allow`, `prefer`, `require`, `verify-ca`, `verify-full`, `no-verify`). */
  readonly sslmode: string | undefined;
  /** Other libpq parameters (`application_name`, `options`, `connect_timeout`, `sslrootcert`, ...). */
  readonly params: Readonly<Record<string, string>>;
  /** Hash of the whole config, password included: equal configs, equal fingerprints. */
  readonly fingerprint: string;
}

/** One entry of a host list. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** What `target_session_attrs` asks of the chosen host: hotload-pg checks `read-write` (and `primary`). */
export function requiresWritable(settings: ConnectionSettings): boolean {
  const attrs = settings.params.target_session_attrs;
  return attrs === 'read-write' || attrs === 'primary';
}

/** True when host selection applies: a host list of two or more entries. */
export function isMultiHost(settings: ConnectionSettings): boolean {
  return (settings.hosts?.length ?? 0) > 1;
}

/** pg options that say *where and as whom* to connect: the source replaces all of them. */
const CONNECTION_FIELDS = [
  'connectionString',
  'host',
  'port',
  'user',
  'password',
  'database',
  'ssl',
] as const;

/** libpq parameters that pg's Client understands under the same name. */
const PASS_THROUGH_PARAMS = [
  'application_name',
  'fallback_application_name',
  'options',
  'client_encoding',
] as const;

/**
 * Builds the options of one generation's `pg.Pool`: the user's pool options (size,
 * timeouts, types, ...) with every connection field taken from the source.
 *
 * Precedence: the source wins for host, port, user, password, database and TLS; a
 * `connectionString` in the pool options is dropped. libpq params map to pg options
 * (`application_name`, `options`, `client_encoding` by name, `connect_timeout` seconds to
 * `connectionTimeoutMillis` unless the pool options set it). Explicit pool options win
 * over params for `application_name`. `ssl` from the pool options is kept only when the
 * source has no sslmode. `host` (one entry of `settings.hosts`) overrides the first host.
 */
export function toPgPoolConfig(
  base: pg.PoolConfig,
  settings: ConnectionSettings,
  host?: HostPort,
): pg.PoolConfig {
  const config: pg.PoolConfig = { ...base };
  for (const field of CONNECTION_FIELDS) delete config[field];
  const params = settings.params;
  for (const name of PASS_THROUGH_PARAMS) {
    const value = params[name];
    if (value !== undefined && base[name] === undefined) config[name] = value;
  }
  const connectTimeout = params.connect_timeout;
  if (connectTimeout !== undefined && base.connectionTimeoutMillis === undefined) {
    const seconds = Number(connectTimeout);
    if (Number.isFinite(seconds) && seconds > 0) config.connectionTimeoutMillis = seconds * 1000;
  }
  config.host = host?.host ?? settings.host;
  config.port = host?.port ?? settings.port;
  config.user = settings.user;
  config.database = settings.database;
  const ssl = settings.sslmode === undefined ? base.ssl : toSsl(settings.sslmode, params);
  if (ssl !== undefined) config.ssl = ssl;
  // Not enumerable, like pg-pool does, so a logged config shows no password.
  Object.defineProperty(config, 'password', {
    value: settings.password ?? '',
    enumerable: false,
    writable: true,
    configurable: true,
  });
  return config;
}

/**
 * libpq sslmode → pg's `ssl` option, libpq semantics:
 * `disable`/`allow`/`prefer` → no TLS (pg cannot fall back between TLS and plain, so the
 * modes that accept plain use plain), `require`/`no-verify` → TLS without certificate
 * checks, `verify-ca` → chain checked but not the host name, `verify-full` → both.
 * `sslrootcert`, `sslcert` and `sslkey` params are read from their files.
 */
function toSsl(sslmode: string, params: Readonly<Record<string, string>>): pg.PoolConfig['ssl'] {
  if (sslmode === 'disable' || sslmode === 'allow' || sslmode === 'prefer') return false;
  const tls: ConnectionOptions = {};
  if (params.sslrootcert) tls.ca = readTlsFile(params.sslrootcert, 'sslrootcert');
  if (params.sslcert) tls.cert = readTlsFile(params.sslcert, 'sslcert');
  if (params.sslkey) tls.key = readTlsFile(params.sslkey, 'sslkey');
  if (sslmode === 'require' || sslmode === 'no-verify') tls.rejectUnauthorized = false;
  if (sslmode === 'verify-ca') tls.checkServerIdentity = () => undefined;
  return tls;
}

/**
 * Reads a TLS file the source names. A failure is the source's fault (it names a file
 * that is not there, or not readable), so it is a `SourceError` naming the key and path.
 */
function readTlsFile(path: string, key: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const errno = (error as NodeJS.ErrnoException).code;
    throw new SourceError({
      code: errno === 'ENOENT' ? 'missing' : 'unreadable',
      source: `${key} of the connection source`,
      file: path,
      key,
      problem: `cannot read the ${key} file named by the source`,
      errno,
    });
  }
}
