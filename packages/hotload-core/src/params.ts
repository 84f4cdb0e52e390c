/**
 * The libpq connection keywords hotload-core accepts (PostgreSQL 18), plus node-postgres'
 * `ssl` and `uselibpqcompat` query parameters. Like libpq, a DSN with any other keyword
 * is rejected (`malformed`). Keyword names in this list are safe to print in errors;
 * other names are never printed, since they come from file contents.
 */
export const LIBPQ_KEYWORDS: ReadonlySet<string> = new Set([
  'host',
  'hostaddr',
  'port',
  'dbname',
  'user',
  'password',
  'passfile',
  'require_auth',
  'channel_binding',
  'connect_timeout',
  'client_encoding',
  'options',
  'application_name',
  'fallback_application_name',
  'keepalives',
  'keepalives_idle',
  'keepalives_interval',
  'keepalives_count',
  'tcp_user_timeout',
  'replication',
  'gssencmode',
  'sslmode',
  'sslnegotiation',
  'sslcompression',
  'sslcert',
  'sslkey',
  'sslkeylogfile',
  'sslpassword',
  'sslcertmode',
  'sslrootcert',
  'sslcrl',
  'sslcrldir',
  'sslsni',
  'requirepeer',
  'ssl_min_protocol_version',
  'ssl_max_protocol_version',
  'min_protocol_version',
  'max_protocol_version',
  'krbsrvname',
  'gsslib',
  'gssdelegation',
  'service',
  'target_session_attrs',
  'load_balance_hosts',
  'scram_client_key',
  'scram_server_key',
  'oauth_issuer',
  'oauth_client_id',
  'oauth_client_secret',
  'oauth_scope',
  // node-postgres URI extras
  'ssl',
  'uselibpqcompat',
]);

/** Keywords whose values are secrets: never printed, kept out of JSON and inspect output. */
export const SECRET_KEYWORDS: ReadonlySet<string> = new Set([
  'password',
  'sslpassword',
  'oauth_client_secret',
  'scram_client_key',
  'scram_server_key',
]);

/** Keywords that become first-class fields of a ConnectionConfig rather than `params`. */
export const FIELD_KEYWORDS: ReadonlySet<string> = new Set([
  'host',
  'port',
  'user',
  'password',
  'dbname',
  'sslmode',
]);

/** Keywords whose values are file paths (resolved against a source's directory). */
export const FILE_KEYWORDS: ReadonlySet<string> = new Set([
  'passfile',
  'sslcert',
  'sslkey',
  'sslrootcert',
  'sslcrl',
  'sslcrldir',
  'sslkeylogfile',
]);

/** libpq sslmode values, plus `no-verify` as pg-connection-string knows it. */
export const SSL_MODES = [
  'disable',
  'allow',
  'prefer',
  'require',
  'verify-ca',
  'verify-full',
  'no-verify',
] as const;
/** One of {@link SSL_MODES}: a libpq `sslmode` value. */
export type SslMode = (typeof SSL_MODES)[number];

export function isSslMode(value: string): value is SslMode {
  return (SSL_MODES as readonly string[]).includes(value);
}

/** libpq `sslnegotiation` values (PostgreSQL 17; node-postgres reads it from pg 8.23 on). */
export const SSL_NEGOTIATIONS: readonly string[] = ['postgres', 'direct'];

/** The sslmodes that always use TLS: the only ones libpq accepts with `sslnegotiation=direct`. */
export const TLS_ONLY_SSL_MODES: ReadonlySet<string> = new Set([
  'require',
  'verify-ca',
  'verify-full',
  'no-verify',
]);
