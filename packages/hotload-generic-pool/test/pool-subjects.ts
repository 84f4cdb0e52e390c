/**
 * The two pools a hotload-generic-pool test runs one scenario on: plain generic-pool (what
 * a program had before) and HotloadGenericPool (what replaces it), both over the same raw
 * `pg.Client` factory and the same connection, with the same pool options. A scenario
 * sees only {@link PoolSubject}, so the two runs can be compared as they are.
 */
import genericPool from 'generic-pool';
import { ConnectionConfig, type LifecycleOptions } from 'hotload-core';
import { type ClientFactory, HotloadGenericPool } from 'hotload-generic-pool';
import { APP_DATABASE, type AppUser, type ServerAddress } from 'hotload-test-support';
import type pg from 'pg';
import { pgClientFactory } from '../../../test/contract/pg-client-factory.js';

/** What a scenario does with a pool: generic-pool's checkout API, as both pools have it. */
export interface PoolSubject {
  readonly name: 'generic-pool' | 'hotload-generic-pool';
  acquire(): Promise<pg.Client>;
  /** Gives a client back; with `error` it is destroyed (generic-pool's `destroy`). */
  release(client: pg.Client, error?: Error): Promise<void>;
  /** Closes the pool once every client in use came back (generic-pool's `drain()` then `clear()`). */
  end(): Promise<void>;
}

/** Where both pools connect to, and how. */
export interface SubjectOptions {
  readonly server: ServerAddress;
  readonly user: AppUser;
  readonly password: string;
  readonly database?: string;
  /** generic-pool options of both pools (of every generation of the hotload one). */
  readonly pool: genericPool.Options;
  /** The factory both use (default: a raw pg.Client factory). */
  readonly factory?: ClientFactory<pg.Client>;
  /** The hotload pool's source: a secret directory holding the same connection. */
  readonly secretDirectory: string;
  /** More lifecycle options of the hotload pool. */
  readonly hotload?: Partial<LifecycleOptions<pg.Client>>;
}

/** Plain generic-pool over `options.factory`, connected as the options say. */
export function plainGenericPool(options: SubjectOptions): PoolSubject {
  const factory = options.factory ?? pgClientFactory;
  const config = ConnectionConfig.create({
    host: options.server.host,
    port: options.server.port,
    user: options.user,
    password: options.password,
    database: options.database ?? APP_DATABASE,
  });
  const host = config.hosts[0]!;
  const never = new AbortController().signal;
  const validate = factory.validate?.bind(factory);
  const pool = genericPool.createPool<pg.Client>(
    {
      create: () => factory.create(config, host, never),
      destroy: (client) => factory.destroy(client),
      ...(validate ? { validate } : {}),
    },
    options.pool,
  );
  return {
    name: 'generic-pool',
    acquire: () => pool.acquire(),
    release: (client, error) => (error === undefined ? pool.release(client) : pool.destroy(client)),
    end: async () => {
      await pool.drain();
      await pool.clear();
    },
  };
}

/** HotloadGenericPool over the same factory, its source the secret directory. */
export async function hotloadGenericPool(
  options: SubjectOptions,
): Promise<PoolSubject & { hotload: HotloadGenericPool<pg.Client> }> {
  const pool = await HotloadGenericPool.create({
    factory: options.factory ?? pgClientFactory,
    pool: options.pool,
    hotload: { source: { secretDirectory: options.secretDirectory }, ...options.hotload },
  });
  return {
    name: 'hotload-generic-pool',
    hotload: pool,
    acquire: () => pool.acquire(),
    release: (client, error) => pool.release(client, error),
    end: () => pool.end(),
  };
}

/** The server process behind a client (what tells two sessions apart). */
export async function backendPid(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return rows[0]!.pid;
}

/**
 * Names each distinct value by order of first appearance (`s1`, `s2`, ...), so runs on two
 * pools (whose clients and server pids differ) compare by which is which.
 */
export function byFirstSeen<T>(values: readonly T[]): string[] {
  const names = new Map<T, string>();
  return values.map((value) => {
    if (!names.has(value)) names.set(value, `s${names.size + 1}`);
    return names.get(value)!;
  });
}

/** Resolves once `client`'s connection has ended ('end' is pg.Client's event for it). */
export function ended(client: pg.Client): Promise<void> {
  return new Promise((resolve) => client.once('end', () => resolve()));
}
