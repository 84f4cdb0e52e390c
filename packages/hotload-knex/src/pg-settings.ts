import type { ConnectionConfig } from 'hotload-core';
import { toPgPoolConfig } from 'hotload-pg';

/** Settings handed to `new pg.Client(...)` (pg's `ClientConfig`, loosely typed). */
export type PgSettings = Record<string, unknown> & { connectionTimeoutMillis?: number };

type PgPoolConfig = Parameters<typeof toPgPoolConfig>[0];

/**
 * The pg settings of one generation: the static settings from Knex's `connection`
 * option with every connection field taken from the source, by hotload-pg's mapping
 * (the same precedence as hotload-pg's `Pool`): the source wins for host, port, user,
 * password, database and TLS (`sslmode`, with libpq's meaning); libpq parameters fill
 * `application_name`, `options`, `client_encoding` and `connectionTimeoutMillis` unless
 * the static settings set them; a static `ssl` is kept only when the source has no
 * `sslmode`; a static `connectionString` is dropped.
 *
 * The password is non-enumerable, so printing Knex's client never shows it.
 */
export function pgSettingsFor(
  staticSettings: Readonly<Record<string, unknown>>,
  config: ConnectionConfig,
): PgSettings {
  return toPgPoolConfig(staticSettings as PgPoolConfig, config) as PgSettings;
}
