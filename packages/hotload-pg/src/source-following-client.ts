import pg from 'pg';
import type { HotloadOptions } from './options.js';
import { Pool } from './pool.js';

/** A module `Client` class that follows a source (see `sourceFollowingClient`). */
export type SourceFollowingClientClass = typeof pg.Client & {
  /** Stops following the source (closes its watcher). Clients already open are not touched. */
  endSource(): Promise<void>;
};

type ClientConfig = string | pg.ClientConfig | undefined;
type ConnectCallback = Parameters<pg.Client['connect']>[0] & {};

/**
 * `Client` of a pg module object that has a source: for libraries that keep their own pool
 * of `pg.Client`s rather than a `pg.Pool` (Sequelize builds `new lib.Client(config)`).
 *
 * - Each new client connects with the source's current settings (host, port, user,
 *   password, database; TLS too when the source had been read before the client was built),
 *   whatever connection fields the library passed.
 * - A client built before a switch reports `_invalid` (the flag Sequelize's `validate()`
 *   reads), so the library's pool retires it the next time it would hand it out and opens
 *   a new one on the new settings; work running on it finishes first.
 *
 * The settings come from a hotload {@link Pool} used as a follower: it watches the source
 * and verifies each change with a real connection before switching (as the pool does), but
 * never serves queries, so its generation number says which settings are current.
 */
export function sourceFollowingClient(hotload: HotloadOptions): SourceFollowingClientClass {
  let follower: Pool | undefined;
  const followerPool = (): Pool => {
    follower ??= new Pool({ max: 1, hotload });
    return follower;
  };

  class SourceFollowingClient extends pg.Client {
    /** Generation whose settings this client uses (undefined until the source was read). */
    #generation: number | undefined;
    #invalid = false;

    constructor(config?: ClientConfig) {
      const pool = followerPool();
      super(
        pool.generation === undefined
          ? config
          : { ...withoutConnectionString(config), ...currentSettings(pool) },
      );
      this.#generation = pool.generation;
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: ConnectCallback): void;
    override connect(callback?: ConnectCallback): Promise<pg.Client> | undefined {
      if (this.#generation !== undefined) {
        if (!callback) return super.connect();
        super.connect(callback);
        return undefined;
      }
      // Built before the source was read: take its settings once it has been.
      const pool = followerPool();
      const connecting = pool.ready().then(() => {
        adoptConnectionFields(this, currentSettings(pool));
        this.#generation = pool.generation;
        return super.connect();
      });
      if (!callback) return connecting;
      connecting.then(
        (client) => (callback as (err: null, client: pg.Client) => void)(null, client),
        (error: Error) => (callback as (err: Error) => void)(error),
      );
      return undefined;
    }

    /** Read by Sequelize's `validate()`: a client of an older generation is retired, not reused. */
    get _invalid(): boolean {
      return this.#invalid || (this.#generation !== undefined && this.#generation !== follower?.generation);
    }

    set _invalid(value: boolean) {
      this.#invalid = value;
    }

    static async endSource(): Promise<void> {
      const pool = follower;
      follower = undefined;
      if (pool !== undefined && !pool.ending) await pool.end();
    }
  }
  return SourceFollowingClient;
}

/** Connection fields of the follower's current generation (pg-pool hides `password`: read it by name). */
function currentSettings(pool: Pool): pg.ClientConfig {
  const options = pool.options;
  return {
    host: options.host,
    port: options.port,
    user: options.user,
    password: options.password,
    database: options.database,
    ssl: options.ssl,
  };
}

/**
 * The library's config without `connectionString`: pg lets a connection string win over
 * separate fields, and the source, not the library, says where and as whom to connect.
 */
function withoutConnectionString(config: ClientConfig): pg.ClientConfig {
  if (typeof config === 'string') return {};
  const { connectionString: _dropped, ...rest } = config ?? {};
  return rest;
}

/**
 * pg.Client keeps the connection fields it was built with on itself and in its
 * `connectionParameters` (read by `connect()` and the startup message); both are set here
 * for a client built before the source was read. These members are pg.Client's since pg 7.
 * TLS cannot change after construction (its Connection is built with it), so such a
 * client keeps the `ssl` it was built with.
 */
function adoptConnectionFields(client: pg.Client, settings: pg.ClientConfig): void {
  const target = client as unknown as Record<string, unknown> & {
    connectionParameters: Record<string, unknown>;
  };
  for (const field of ['host', 'port', 'user', 'password', 'database'] as const) {
    if (settings[field] === undefined) continue;
    target[field] = settings[field];
    target.connectionParameters[field] = settings[field];
  }
}
