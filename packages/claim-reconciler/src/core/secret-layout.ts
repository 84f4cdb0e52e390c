/**
 * The secret a claim publishes, whatever holds it (a kubelet-style folder, a Kubernetes
 * Secret): the credentials, the keys they are written under, and reading them back. Both
 * sinks use it; neither imports the other.
 */
import { readFileSync } from 'node:fs';
import { ConnectionConfig, toSecretFiles } from 'hotload-core';
import type { SslModeSetting } from './ssl-mode.js';

/** The keys of a published secret that hold the credentials, one value each. */
export const CREDENTIAL_KEYS = ['hostname', 'port', 'database', 'username', 'password', 'sslmode'] as const;

/** The key of the CA bundle in a published secret (cert-manager's name for it). */
export const CA_CERTIFICATE_KEY = 'ca.crt';

/** The credentials a secret publishes. */
export interface PublishedCredentials {
  /** The host applications connect to. */
  readonly host: string;
  /** The port applications connect to. */
  readonly port: number;
  /** The claim's database. */
  readonly database: string;
  /** The active login user (`<userName>_a` or `_b`). */
  readonly username: string;
  /** The active user's password. A secret: never logged. */
  readonly password: string;
  /** The sslmode applications connect with. */
  readonly sslmode: SslModeSetting;
  /**
   * The CA bundle file applications verify the server with (`verify-*`): published as the
   * key `ca.crt` (its content, read at publish time), which hotload reads as `sslrootcert`.
   */
  readonly sslrootcert?: string;
}

/**
 * Secret keys for `credentials`: `hostname`, `port`, `database`, `username`, `password`,
 * `sslmode`, `dsn.txt`, `uri_dsn.txt`, and `<dsnName>` / `uri_<dsnName>` when the claim
 * names its own DSN key (as the database controller does); `ca.crt` when the credentials
 * name a CA bundle (cert-manager's key for it, which hotload maps to `sslrootcert`).
 */
export function secretFiles(credentials: PublishedCredentials, dsnName: string): Record<string, string> {
  const config = ConnectionConfig.create({
    host: credentials.host,
    port: credentials.port,
    user: credentials.username,
    password: credentials.password,
    database: credentials.database,
    sslmode: credentials.sslmode,
  });
  const files = toSecretFiles(config);
  if (dsnName !== 'dsn.txt') {
    files[dsnName] = files['dsn.txt']!;
    files[`uri_${dsnName}`] = files['uri_dsn.txt']!;
  }
  if (credentials.sslrootcert !== undefined)
    files[CA_CERTIFICATE_KEY] = readFileSync(credentials.sslrootcert, 'utf8');
  return files;
}

/**
 * The credentials a secret's keys hold (`key` reads one key's text), or undefined when a
 * key is missing or the port is not a number. Shared by every sink.
 */
export function credentialsFromSecret(
  key: (name: string) => string | undefined,
): PublishedCredentials | undefined {
  const [host, port, database, username, password, sslmode] = CREDENTIAL_KEYS.map(key);
  if (!host || !port || !database || !username || !password || !/^\d+$/.test(port)) return undefined;
  return {
    host,
    port: Number(port),
    database,
    username,
    password,
    sslmode: (sslmode ?? 'disable') as SslModeSetting,
  };
}

/** Whether a secret with `currentCount` keys (`key` reads one) differs from `wanted`. */
export function secretDiffers(
  key: (name: string) => string | undefined,
  currentCount: number,
  wanted: Readonly<Record<string, string>>,
): boolean {
  const keys = Object.keys(wanted);
  return currentCount !== keys.length || keys.some((name) => key(name) !== wanted[name]);
}
