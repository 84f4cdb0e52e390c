/**
 * pg client configs from connection parts, and the login check used to verify fresh
 * credentials before they are published.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { SslModeSetting } from './reconciler-config.js';

/** Parts of one PostgreSQL connection. */
export interface ConnectionParts {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly password: string;
  readonly database: string;
  readonly sslmode: SslModeSetting;
  /** CA bundle file the server's certificate is checked against (`verify-*`); else the system CAs. */
  readonly sslrootcert?: string;
}

const CONNECT_TIMEOUT_MILLIS = 10_000;

/**
 * A `pg.ClientConfig` for `parts`. pg has no opportunistic TLS, so `allow`/`prefer` connect
 * without TLS; `require` encrypts without verifying; `verify-ca` checks the certificate's
 * chain (against `sslrootcert`, read now so a rotated bundle is used), `verify-full` its
 * host name too, as libpq does.
 */
export function pgClientConfig(parts: ConnectionParts): pg.ClientConfig {
  const verify = parts.sslmode === 'verify-ca' || parts.sslmode === 'verify-full';
  const ssl =
    parts.sslmode === 'require'
      ? { rejectUnauthorized: false }
      : verify
        ? {
            rejectUnauthorized: true,
            ...(parts.sslrootcert === undefined ? {} : { ca: readFileSync(parts.sslrootcert, 'utf8') }),
            ...(parts.sslmode === 'verify-ca' ? { checkServerIdentity: () => undefined } : {}),
          }
        : false;
  return {
    host: parts.host,
    port: parts.port,
    user: parts.user,
    password: parts.password,
    database: parts.database,
    ssl,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MILLIS,
    application_name: 'hotload-claim-reconciler',
  };
}

/** Outcome of a login attempt; `reason` is pg's message (pg never puts passwords in it). */
export type LoginResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: string; readonly code?: string };

/**
 * Opens a connection with `parts` and closes it. Never throws. pg's `connect` resolves on
 * the server's first ReadyForQuery: the password was accepted, the role may log in and
 * connect to the database, and the session started. A query after it (there was a
 * `SELECT 1`) proved nothing more and cost every claim a round trip and a statement.
 */
export async function tryLogin(parts: ConnectionParts): Promise<LoginResult> {
  const client = new pg.Client(pgClientConfig(parts));
  // An 'error' event after connect (e.g. the server going away) must not crash the process.
  client.on('error', () => {});
  try {
    await client.connect();
    return { ok: true };
  } catch (error) {
    const e = error as Error & { code?: string };
    return { ok: false, reason: e.message, code: e.code };
  } finally {
    await client.end().catch(() => {});
  }
}
