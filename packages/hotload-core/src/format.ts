import type { ConnectionConfig } from './config.js';
import { formatHostForUri } from './config.js';

/**
 * Formatting a config back into DSNs and secret files. These functions reveal secrets on
 * purpose (they produce what a Secret holds): never log their output.
 */

/** Quotes a libpq key/value value when needed: single quotes, `\'` and `\\` escapes. */
export function quoteLibpqValue(value: string): string {
  if (value !== '' && !/[\s'\\]/.test(value)) return value;
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function allParams(config: ConnectionConfig): [string, string][] {
  const out: [string, string][] = [];
  if (config.sslmode) out.push(['sslmode', config.sslmode]);
  for (const [k, v] of Object.entries(config.params)) out.push([k, v]);
  for (const [k, v] of Object.entries(config.secretParams)) out.push([k, v]);
  return out;
}

/** `host=… port=… user=… password=… dbname=… sslmode=…`, the form of db-controller's `dsn.txt`. */
export function formatKeyValueDsn(config: ConnectionConfig): string {
  const pairs: [string, string][] = [
    ['host', config.hosts.map((h) => h.host).join(',')],
    ['port', config.hosts.map((h) => String(h.port)).join(',')],
    ['user', config.user],
  ];
  if (config.password !== undefined) pairs.push(['password', config.password]);
  pairs.push(['dbname', config.database], ...allParams(config));
  return pairs.map(([k, v]) => `${k}=${quoteLibpqValue(v)}`).join(' ');
}

/** `postgres://user:password@host:port/db?sslmode=…`, the form of db-controller's `uri_dsn.txt`. */
export function formatUriDsn(config: ConnectionConfig): string {
  const auth =
    encodeURIComponent(config.user) +
    (config.password === undefined ? '' : `:${encodeURIComponent(config.password)}`);
  const hosts = config.hosts.map((h) => `${formatHostForUri(h.host)}:${h.port}`).join(',');
  const query = allParams(config)
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&');
  return `postgres://${auth}@${hosts}/${encodeURIComponent(config.database)}${query ? `?${query}` : ''}`;
}

/**
 * The files the database controller (db-controller) writes for a claim: `hostname`,
 * `port`, `username`, `password`, `database`, `sslmode`, `dsn.txt`, `uri_dsn.txt`, all
 * consistent. Feed it to {@link AtomicSecretWriter.write}. Multi-host configs write the
 * comma-separated host list in `hostname` and the port list in `port`.
 */
export function toSecretFiles(config: ConnectionConfig): Record<string, string> {
  const files: Record<string, string> = {
    hostname: config.hosts.map((h) => h.host).join(','),
    port: config.hosts.map((h) => String(h.port)).join(','),
    username: config.user,
    database: config.database,
    'dsn.txt': formatKeyValueDsn(config),
    'uri_dsn.txt': formatUriDsn(config),
  };
  if (config.password !== undefined) files.password = config.password;
  if (config.sslmode) files.sslmode = config.sslmode;
  return files;
}
