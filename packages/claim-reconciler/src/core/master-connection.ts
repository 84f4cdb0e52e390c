/**
 * Master (admin) connections to PostgreSQL instances, one small pool per instance, shared by
 * every claim that targets it during a reconcile pass (folder mode) or for the life of the
 * process (controller mode). The pool is a hotload-pg `Pool` on the master password file
 * ({@link MasterPasswordSource}): the reconciler follows a rotated master password as the
 * services it serves follow theirs, without a restart and without a failed statement.
 */
import { Pool } from 'hotload-pg';
import pg from 'pg';
import { type InstanceTarget, instanceId } from './instance-target.js';
import { LockSessions } from './lock-sessions.js';
import { MasterPasswordSource } from './master-password-source.js';
import { pgClientConfig } from './pg-connection.js';
import { readMasterPassword } from './reconciler-config.js';

/**
 * How long connections opened with a master password that was rotated may finish their
 * work (a reconcile holding an advisory lock, a long GRANT) before they are closed.
 */
export const MASTER_DRAIN_TIMEOUT_MILLIS = 5 * 60_000;

/** First key of every advisory lock this reconciler takes (the second names the claim users). */
export const ADVISORY_LOCK_NAMESPACE = 'hotload-claim-reconciler';

export { type InstanceTarget, instanceId } from './instance-target.js';

/** Admin access to one instance. */
export class MasterConnection {
  readonly #pool: Pool;
  readonly #lockSessions: LockSessions;

  constructor(
    /** The instance this connects to, and how it logs in. */
    readonly target: InstanceTarget,
    maxConnections: number,
  ) {
    const { connectionTimeoutMillis, application_name } = pgClientConfig({
      host: target.host,
      port: target.port,
      user: target.fragment.username,
      password: '',
      database: target.homeDatabase ?? 'postgres',
      sslmode: target.fragment.sslmode,
    });
    this.#pool = new Pool({
      max: maxConnections,
      connectionTimeoutMillis,
      application_name,
      hotload: {
        source: new MasterPasswordSource(target),
        drainTimeoutMillis: MASTER_DRAIN_TIMEOUT_MILLIS,
      },
    });
    // Idle clients that lose their server emit 'error' on the pool; the next query reports it.
    this.#pool.on('error', () => {});
    this.#lockSessions = new LockSessions(() => this.#openLockSession(), maxConnections);
    // A rotated master password: lock sessions logged in with the old one drain too. The
    // pool's first generation also emits 'switch' (from no generation), which may come after
    // a lock session opened: that session logged in with the current password, so it stays.
    this.#pool.on('switch', ({ fromGeneration }) => {
      if (fromGeneration !== undefined) this.#lockSessions.retire();
    });
  }

  /** The pool (its events: `switch` when a rotated master password is taken, `drained`, ...). */
  get pool(): Pool {
    return this.#pool;
  }

  /** Runs one statement on the home database (`postgres` unless the target names another). */
  async query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    return this.#pool.query<R>(text, values).catch((error: unknown) => {
      throw this.#named(error);
    });
  }

  /**
   * A connection-level failure (network, login, server shutting down or out of
   * connections) named with the fragment key, host and user, so an operator knows which
   * master login broke; SQL errors pass unchanged (callers test their SQLSTATE).
   */
  #named(error: unknown): unknown {
    const code = (error as { code?: unknown }).code;
    const connectionLevel =
      typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || /^(08|28|53|57)/.test(code);
    if (!connectionLevel || !(error instanceof Error)) return error;
    const { label, fragment } = this.target;
    const login = fragment.password.kind === 'dsn' ? fragment.password.description : `fragment key ${label}`;
    const named = new Error(`${login} (${fragment.username}@${instanceId(this.target)}): ${error.message}`, {
      cause: error,
    });
    return Object.assign(named, { code });
  }

  /**
   * Runs `statements` in one transaction on one pooled client: all of them take effect or
   * none (a client killed before COMMIT leaves nothing behind, the server rolls back).
   */
  async transaction(statements: readonly string[]): Promise<void> {
    const client = await this.#pool.connect().catch((error: unknown) => {
      throw this.#named(error);
    });
    let broken = false;
    try {
      await client.query('BEGIN');
      for (const statement of statements) await client.query(statement);
      await client.query('COMMIT');
    } catch (error) {
      broken = await client.query('ROLLBACK').then(
        () => false,
        () => true,
      );
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** Runs statements on one client connected to `database` (for per-database grants). */
  async inDatabase<T>(database: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client(await this.#clientConfig(database));
    client.on('error', () => {});
    await client.connect().catch((error: unknown) => {
      throw this.#named(error);
    });
    try {
      return await work(client);
    } finally {
      await client.end().catch(() => {});
    }
  }

  /**
   * Runs `work` holding the PostgreSQL advisory lock `name` on this instance, so that two
   * reconcilers (processes, machines) never work on the same claim users at once: the
   * second waits, then observes what the first did. The lock lives on a session of its own
   * (not a pooled query connection, so a pass with many claims cannot starve its own
   * queries); if this process dies the server ends the session and releases the lock. A
   * session whose lock was released is kept for the next claim (`lock-sessions.ts`).
   */
  async withAdvisoryLock<T>(name: string, work: () => Promise<T>): Promise<T> {
    const key = [ADVISORY_LOCK_NAMESPACE, name];
    return this.#lockSessions.run(
      (client) => client.query('SELECT pg_advisory_lock(hashtext($1), hashtext($2))', key),
      async (client) => {
        const { rows } = await client.query<{ released: boolean }>(
          'SELECT pg_advisory_unlock(hashtext($1), hashtext($2)) AS released',
          key,
        );
        return rows[0]?.released === true;
      },
      work,
    );
  }

  /** A new lock session (`lock-sessions.ts`), logged in with the master password as it is now. */
  async #openLockSession(): Promise<pg.Client> {
    const client = new pg.Client(await this.#clientConfig(this.target.homeDatabase ?? 'postgres'));
    client.on('error', () => {});
    await client.connect().catch((error: unknown) => {
      throw this.#named(error);
    });
    return client;
  }

  /** A lone client's config, with the master password as it is now (read at each connection). */
  async #clientConfig(database: string): Promise<pg.ClientConfig> {
    const { host, port, fragment } = this.target;
    return pgClientConfig({
      host,
      port,
      user: fragment.username,
      password: await readMasterPassword(fragment),
      database,
      sslmode: fragment.sslmode,
      sslrootcert: fragment.sslrootcert,
    });
  }

  /** Closes the pool and the idle lock sessions. */
  async close(): Promise<void> {
    await Promise.all([this.#pool.end(), this.#lockSessions.close()]);
  }
}

/** Opens master connections on demand, one per fragment key and instance, and closes them all. */
export class MasterConnections {
  readonly #open = new Map<string, Promise<MasterConnection>>();

  constructor(private readonly maxConnectionsPerInstance = 4) {}

  /** The connection for `target`, once its master login was read and verified. */
  get(target: InstanceTarget): Promise<MasterConnection> {
    // Per fragment key, even when two keys share user, host and sslmode: each logs in with
    // its own password file, so a wrong one is found rather than hidden by the other's.
    const key = `${target.label}|${target.fragment.username}@${instanceId(target)}/${target.homeDatabase ?? 'postgres'}/${target.fragment.sslmode}`;
    let connection = this.#open.get(key);
    if (!connection) {
      // Read once first so that a missing or empty password fails here, naming the file,
      // rather than leaving the pool waiting for a source that never reads.
      connection = readMasterPassword(target.fragment).then(
        () => new MasterConnection(target, this.maxConnectionsPerInstance),
      );
      // A failed password read is not cached: the next pass tries again.
      connection.catch(() => this.#open.delete(key));
      this.#open.set(key, connection);
    }
    return connection;
  }

  /** Closes every pool opened so far. */
  async closeAll(): Promise<void> {
    const connections = [...this.#open.values()];
    this.#open.clear();
    await Promise.all(connections.map(async (c) => (await c.catch(() => undefined))?.close()));
  }
}
