import type { ConnectionOptions } from 'node:tls';
import type { HostPort } from '../config.js';
import { readClientTlsFiles } from './tls-files.js';

/**
 * The connection fields the mapping reads: a `ConnectionConfig` has this shape, and so
 * may anything built in code.
 */
export interface PgConnectionFields {
  /** The first host (used when no `host` is given to the mapping). */
  readonly host: string;
  /** The port of {@link PgConnectionFields.host}. */
  readonly port: number;
  /** The role to log in as. */
  readonly user: string;
  /** Read only here; never copied into anything enumerable. */
  readonly password: string | undefined;
  /** The database to connect to. */
  readonly database: string;
  /** libpq sslmode. */
  readonly sslmode: string | undefined;
  /** Other libpq parameters (`application_name`, `connect_timeout`, `sslrootcert`, ...). */
  readonly params: Readonly<Record<string, string>>;
}

/** pg's client options as far as the mapping writes them (structural: hotload-core does not load pg). */
export type PgClientSettings = Record<string, unknown> & {
  host?: string;
  port?: number;
  user?: string;
  password?: string;
  database?: string;
  ssl?: unknown;
  connectionTimeoutMillis?: number;
};

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
 * The options of a `pg.Client` (or `pg.Pool`) for one generation: the user's static
 * options with every connection field taken from the source, on `host` (one entry of
 * the config's host list; default the first).
 *
 * Precedence: the source wins for host, port, user, password, database and TLS; a
 * `connectionString` is dropped. libpq params map to pg options (`application_name`,
 * `options`, `client_encoding` by name, `connect_timeout` seconds to
 * `connectionTimeoutMillis`) unless the static options set them. A static `ssl` is kept
 * only when the source has no sslmode, a static `sslnegotiation` only when the source has
 * neither sslmode nor sslnegotiation (its own goes to pg 8.23+'s `sslnegotiation`). TLS
 * files (`sslrootcert`, `sslcert`, `sslkey`) are read here, once: the settings verified
 * are the settings used.
 *
 * The password is non-enumerable, so a logged config shows no password.
 */
export function toPgClientSettings(
  base: Readonly<Record<string, unknown>>,
  config: PgConnectionFields,
  host: HostPort = { host: config.host, port: config.port },
): PgClientSettings {
  const settings: PgClientSettings = { ...base };
  for (const field of CONNECTION_FIELDS) delete settings[field];
  const params = config.params;
  for (const name of PASS_THROUGH_PARAMS) {
    const value = params[name];
    if (value !== undefined && base[name] === undefined) settings[name] = value;
  }
  const connectTimeout = Number(params.connect_timeout);
  if (base.connectionTimeoutMillis === undefined && Number.isFinite(connectTimeout) && connectTimeout > 0) {
    settings.connectionTimeoutMillis = connectTimeout * 1000;
  }
  settings.host = host.host;
  settings.port = host.port;
  settings.user = config.user;
  settings.database = config.database;
  const ssl = config.sslmode === undefined ? base.ssl : libpqTlsOptions(config.sslmode, params);
  if (ssl !== undefined) settings.ssl = ssl;
  // How TLS starts goes with the TLS settings: a source that names sslmode or
  // sslnegotiation decides it (pg 8.23+ reads it; older pg ignores the field).
  if (config.sslmode !== undefined || params.sslnegotiation !== undefined) {
    delete settings.sslnegotiation;
    if (params.sslnegotiation !== undefined) settings.sslnegotiation = params.sslnegotiation;
  }
  Object.defineProperty(settings, 'password', {
    value: config.password ?? '',
    enumerable: false,
    writable: true,
    configurable: true,
  });
  return settings;
}

/**
 * libpq sslmode → Node TLS options (pg's and postgres.js's `ssl`), libpq semantics: `disable`/`allow`/`prefer` → no
 * TLS (pg cannot fall back between TLS and plain, so the modes that accept plain use
 * plain), `require`/`no-verify` → TLS without certificate checks, `verify-ca` → chain
 * checked but not the host name, `verify-full` → both. As in libpq, `require` with an
 * `sslrootcert` checks the chain (verify-ca): pg without `uselibpqcompat` would treat
 * `require` as verify-full instead. Reads the certificate files and checks them as libpq
 * does (key permissions, key matching the certificate, the certificate valid now): a
 * `SourceError` naming the file otherwise.
 */
export function libpqTlsOptions(
  sslmode: string,
  params: Readonly<Record<string, string>>,
): false | ConnectionOptions {
  if (sslmode === 'disable' || sslmode === 'allow' || sslmode === 'prefer') return false;
  const files = readClientTlsFiles(params);
  const tls: ConnectionOptions = {};
  if (files.ca !== undefined) tls.ca = files.ca;
  if (files.cert !== undefined) tls.cert = files.cert;
  if (files.key !== undefined) tls.key = files.key;
  const checksChain =
    sslmode === 'verify-ca' || sslmode === 'verify-full' || (sslmode === 'require' && files.ca !== undefined);
  if (!checksChain) tls.rejectUnauthorized = false;
  else if (sslmode !== 'verify-full') tls.checkServerIdentity = () => undefined;
  return tls;
}
