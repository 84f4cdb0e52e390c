/**
 * The secret a claim publishes, whatever holds it (a kubelet-style folder, a Kubernetes
 * Secret): the credentials, the keys they are written under, and reading them back. Both
 * sinks use it; neither imports the other.
 */
import { ConnectionConfig, toSecretFiles } from 'hotload-core';
import type { SslModeSetting } from './ssl-mode.js';

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
}

/**
 * Secret keys for `credentials`: `hostname`, `port`, `database`, `username`, `password`,
 * `sslmode`, `dsn.txt`, `uri_dsn.txt`, and `<dsnName>` / `uri_<dsnName>` when the claim
 * names its own DSN key (as the database controller does).
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
  return files;
}

/**
 * The credentials a secret's keys hold (`key` reads one key's text), or undefined when a
 * key is missing or the port is not a number. Shared by every sink.
 */
export function credentialsFromSecret(
  key: (name: string) => string | undefined,
): PublishedCredentials | undefined {
  const [host, port, database, username, password, sslmode] = [
    'hostname',
    'port',
    'database',
    'username',
    'password',
    'sslmode',
  ].map(key);
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
