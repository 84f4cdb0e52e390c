import { type ConnectionOptions, checkServerIdentity, type PeerCertificate } from 'node:tls';
import { type ConnectionConfig, type HostPort, libpqTlsOptions } from 'hotload-core';
import type postgres from 'postgres';

/** postgres.js's options without custom types. */
// biome-ignore lint/complexity/noBannedTypes: `{}` is postgres.js's own default type argument.
export type PostgresOptions = postgres.Options<{}>;

/** postgres.js options that say *where and as whom* to connect: the source replaces them. */
const CONNECTION_FIELDS = [
  'host',
  'hostname',
  'port',
  'user',
  'username',
  'pass',
  'password',
  'database',
  'db',
  'ssl',
  'path',
] as const;

/**
 * The options of one generation's `postgres()` instance: the user's options (size,
 * timeouts, transforms, ...) with every connection field from the source, on `host`.
 * TLS files (`sslrootcert`, `sslcert`, `sslkey`) are read here, once: the instance
 * verified is the instance promoted.
 */
export function toPostgresOptions(
  base: PostgresOptions,
  config: ConnectionConfig,
  host: HostPort,
): PostgresOptions {
  const options: Record<string, unknown> = { ...base };
  for (const field of CONNECTION_FIELDS) delete options[field];
  const params = config.params;
  const connectTimeout = Number(params.connect_timeout);
  if (base.connect_timeout === undefined && Number.isFinite(connectTimeout) && connectTimeout > 0) {
    options.connect_timeout = connectTimeout;
  }
  const applicationName = params.application_name;
  if (applicationName !== undefined)
    options.connection = { application_name: applicationName, ...base.connection };
  options.host = host.host;
  options.port = host.port;
  options.user = config.user;
  options.database = config.database;
  if (config.password !== undefined) options.password = config.password;
  const ssl = config.sslmode === undefined ? base.ssl : libpqTlsOptions(config.sslmode, params);
  if (ssl !== undefined)
    options.ssl = typeof ssl === 'object' && ssl !== null ? checkingHost(ssl, host.host) : ssl;
  return options as PostgresOptions;
}

/**
 * postgres.js hands Node `tls.connect` its socket and no host (and no servername for an
 * IP address), so Node would check the certificate against `localhost`: verify-full
 * checks the host the generation connects to instead.
 */
function checkingHost(ssl: object, hostName: string): object {
  const tlsOptions = ssl as ConnectionOptions;
  if (tlsOptions.checkServerIdentity !== undefined || tlsOptions.rejectUnauthorized === false) return ssl;
  return {
    ...tlsOptions,
    checkServerIdentity: (_name: string, cert: PeerCertificate) => checkServerIdentity(hostName, cert),
  };
}
