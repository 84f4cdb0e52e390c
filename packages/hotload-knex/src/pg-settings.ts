import { readFileSync } from 'node:fs';
import type { ConnectionConfig } from 'hotload-core';

/** Settings handed to `new pg.Client(...)` (pg's `ClientConfig`, loosely typed). */
export type PgSettings = Record<string, unknown> & { connectionTimeoutMillis?: number };

/** libpq parameters that pg's Client understands under the same name. */
const PASS_THROUGH_PARAMS = [
  'application_name',
  'fallback_application_name',
  'options',
  'client_encoding',
] as const;

/**
 * The pg settings of one generation: the static settings from Knex's `connection`
 * option, with everything the source says taking precedence: host, port, user,
 * password, database and (when the source has an `sslmode`) TLS. libpq parameters map
 * to pg options (`application_name`, `fallback_application_name`, `options`,
 * `client_encoding` by name; `connect_timeout` seconds to `connectionTimeoutMillis`)
 * unless the static settings set them. A `connectionString` in the static settings is
 * dropped: the source is where the connection comes from.
 *
 * The password is non-enumerable, so printing Knex's client never shows it.
 */
export function pgSettingsFor(
  staticSettings: Readonly<Record<string, unknown>>,
  config: ConnectionConfig,
): PgSettings {
  const settings: PgSettings = { ...staticSettings };
  delete settings.connectionString;
  delete settings.password;
  for (const name of PASS_THROUGH_PARAMS) {
    const value = config.params[name];
    if (value !== undefined && settings[name] === undefined) settings[name] = value;
  }
  const connectTimeout = Number(config.params.connect_timeout);
  if (connectTimeout > 0 && settings.connectionTimeoutMillis === undefined) {
    settings.connectionTimeoutMillis = connectTimeout * 1000;
  }
  settings.host = config.host;
  settings.port = config.port;
  settings.user = config.user;
  settings.database = config.database;
  if (config.sslmode !== undefined) settings.ssl = tlsFor(config.sslmode, config.params);
  Object.defineProperty(settings, 'password', {
    value: config.password ?? '',
    enumerable: false,
    writable: true,
  });
  return settings;
}

/**
 * libpq sslmode → pg's `ssl` option, with libpq's meaning: `disable`/`allow`/`prefer`
 * → plain (pg cannot fall back between TLS and plain, so the modes that accept plain use
 * it), `require`/`no-verify` → TLS without certificate checks, `verify-ca` → chain
 * checked but not the host name, `verify-full` → both. `sslrootcert`, `sslcert` and
 * `sslkey` are read from their files.
 */
function tlsFor(sslmode: string, params: Readonly<Record<string, string>>): false | Record<string, unknown> {
  if (sslmode === 'disable' || sslmode === 'allow' || sslmode === 'prefer') return false;
  const tls: Record<string, unknown> = {};
  if (params.sslrootcert) tls.ca = readFileSync(params.sslrootcert, 'utf8');
  if (params.sslcert) tls.cert = readFileSync(params.sslcert, 'utf8');
  if (params.sslkey) tls.key = readFileSync(params.sslkey, 'utf8');
  if (sslmode === 'require' || sslmode === 'no-verify') tls.rejectUnauthorized = false;
  if (sslmode === 'verify-ca') tls.checkServerIdentity = () => undefined;
  return tls;
}
