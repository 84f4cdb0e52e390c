import { type HostPort, toPgClientSettings } from 'hotload-core';
import type pg from 'pg';

/**
 * The connection fields hotload-pg reads from a source's config. hotload-core's
 * `ConnectionConfig` has this shape; anything else with it (e.g. built in code) works too.
 */
export interface ConnectionSettings {
  /** The first host (the only one tried when {@link ConnectionSettings.hosts} has fewer than two entries). */
  readonly host: string;
  /** The first host's port. */
  readonly port: number;
  /**
   * libpq host list (`host=a,b` / `postgres://u@a:5432,b:5433/db`), in order. With two or
   * more, each generation is built on the first host that connects and, with
   * `target_session_attrs=read-write` (or `primary`), accepts writes.
   */
  readonly hosts?: ReadonlyArray<HostPort> | undefined;
  /** The login role. */
  readonly user: string;
  /** Read only when a generation is built; never copied into events or errors. */
  readonly password: string | undefined;
  /** The database to connect to. */
  readonly database: string;
  /** libpq sslmode (`disable`, `allow`, `prefer`, `require`, `verify-ca`, `verify-full`, `no-verify`). */
  readonly sslmode: string | undefined;
  /** Other libpq parameters (`application_name`, `options`, `connect_timeout`, `sslrootcert`, ...). */
  readonly params: Readonly<Record<string, string>>;
  /** Hash of the whole config, password included: equal configs, equal fingerprints. */
  readonly fingerprint: string;
}

/**
 * Builds the options of one generation's `pg.Pool`: the user's pool options (size,
 * timeouts, types, ...) with every connection field taken from the source.
 *
 * Precedence: the source wins for host, port, user, password, database and TLS; a
 * `connectionString` in the pool options is dropped. libpq params map to pg options
 * (`application_name`, `options`, `client_encoding` by name, `connect_timeout` seconds to
 * `connectionTimeoutMillis` unless the pool options set it). Explicit pool options win
 * over params for `application_name`. `ssl` from the pool options is kept only when the
 * source has no sslmode; `sslnegotiation` (pg 8.23+) only when the source names neither
 * sslmode nor sslnegotiation. `host` (one entry of `settings.hosts`) overrides the first host.
 * TLS files are read here, once. The mapping itself is hotload-core's `toPgClientSettings`
 * (shared with hotload-knex and the generic pool).
 */
export function toPgPoolConfig(
  base: pg.PoolConfig,
  settings: ConnectionSettings,
  host?: HostPort,
): pg.PoolConfig {
  return toPgClientSettings(base as Readonly<Record<string, unknown>>, settings, host) as pg.PoolConfig;
}
