import { ConnectionConfig as Config, type ConnectionConfig, type ConnectionSource } from 'hotload-core';
import pg from 'pg';

/** What a pool without a source is called in metrics, diagnostics and logs. */
export const STATIC_SOURCE_NAME = 'static';

/**
 * The fixed "source" of a `Pool` built from pg options alone (no `hotload.source`).
 *
 * Why a source rather than a pool without a lifecycle manager: `switchTo()` must verify,
 * switch, drain and force-close exactly as a source change does, with the same events,
 * metrics and logs, so the pool keeps one code path. This source yields one config, once
 * (nothing to watch); the pool builds that first generation from the pg options as they
 * are (connection string, `Client`, `ssl` objects, env defaults: all pg's), recognising
 * {@link config} by identity. The config itself only names the target in events: host,
 * port, user and database as pg resolves them, never the password.
 */
export class PgOptionsSource implements ConnectionSource {
  readonly kind = 'static';
  readonly description = STATIC_SOURCE_NAME;
  readonly watchPaths: readonly string[] = [];
  readonly config: ConnectionConfig;

  constructor(options: pg.PoolConfig) {
    const target = targetOf(options);
    const config = target && Config.tryCreate(target);
    // Options pg cannot resolve, or a target a config does not accept (an odd host or
    // name): events name pg's defaults.
    this.config =
      config instanceof Config
        ? config
        : Config.create({
            host: 'localhost',
            port: target?.port ?? 5432,
            user: 'postgres',
            database: 'postgres',
          });
  }

  async read(): Promise<ConnectionConfig> {
    return this.config;
  }
}

/**
 * Where `options` connect, as pg resolves them (options, connection string, PG* environment
 * and pg.defaults, through a pg.Client that opens nothing); undefined if pg cannot (an
 * invalid connection string): pg.Pool reports that when it connects, not when it is built.
 */
function targetOf(
  options: pg.PoolConfig,
): { host: string; port: number; user: string; database: string } | undefined {
  let resolved: pg.Client;
  try {
    resolved = new pg.Client(options);
  } catch {
    return undefined;
  }
  return {
    host: resolved.host,
    port: resolved.port,
    user: resolved.user ?? 'postgres',
    database: resolved.database ?? resolved.user ?? 'postgres',
  };
}
