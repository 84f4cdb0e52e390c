/**
 * Test fixtures for hotload-knex: a database laid out the way the claim reconciler lays
 * it out (a NOLOGIN base role `app` owning everything, login users `app_a` and `app_b`
 * that act as `app`), a secret directory written the way the kubelet writes one, and
 * a steady query load that counts failures.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSecretAtomically } from 'hotload-core';
import type { HotloadKnexEventMap, HotloadKnexEvents } from 'hotload-knex';
import type { PostgresCluster } from 'hotload-test-support';
import type { Knex } from 'knex';

export const APP_DATABASE = 'appdb';
export type AppUser = 'app_a' | 'app_b';

/** A fresh random password (what a rotation would generate). */
export function newPassword(): string {
  return randomBytes(18).toString('base64url');
}

/** Creates the base role, both login users (with the given passwords) and the database. */
export async function createAppDatabase(
  cluster: PostgresCluster,
  passwords: Record<AppUser, string>,
): Promise<void> {
  await cluster.query('CREATE ROLE app NOLOGIN');
  for (const user of ['app_a', 'app_b'] as const) {
    await cluster.query(`CREATE ROLE ${user} LOGIN IN ROLE app PASSWORD '${passwords[user]}'`);
    // Sessions of either login user act as `app`, so objects they create belong to `app`.
    await cluster.query(`ALTER ROLE ${user} SET role = 'app'`);
  }
  await cluster.query(`CREATE DATABASE ${APP_DATABASE} OWNER app`);
  await cluster.query('ALTER SCHEMA public OWNER TO app', [], APP_DATABASE);
  await cluster.query('CREATE TABLE items (id serial PRIMARY KEY, note text NOT NULL)', [], APP_DATABASE);
  await cluster.query('ALTER TABLE items OWNER TO app', [], APP_DATABASE);
}

/** Sets a login user's password on the server (what a rotation does first). */
export async function setPassword(cluster: PostgresCluster, user: AppUser, password: string): Promise<void> {
  await cluster.query(`ALTER ROLE ${user} PASSWORD '${password}'`);
}

/** Sessions of `user` in the app database, as the server sees them. */
export async function sessionsOf(cluster: PostgresCluster, user: string): Promise<number> {
  const { rows } = await cluster.query<{ n: string }>(
    'SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1 AND datname = $2',
    [user, APP_DATABASE],
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Polls until the server shows no session of `user` (a backend may take a moment to exit
 * after its client hung up), for at most `attempts` x 50 ms; returns what it saw last.
 */
export async function sessionsOfAfterExit(
  cluster: PostgresCluster,
  user: string,
  attempts = 200,
): Promise<number> {
  let count = await sessionsOf(cluster, user);
  for (let i = 0; i < attempts && count > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    count = await sessionsOf(cluster, user);
  }
  return count;
}

/** A temporary secret directory, written atomically like a mounted Kubernetes Secret. */
export class SecretDirectory {
  readonly path = mkdtempSync(join(tmpdir(), 'hotload-knex-secret-'));

  async write(cluster: PostgresCluster, user: AppUser, password: string): Promise<void> {
    await writeSecretAtomically(this.path, {
      hostname: cluster.host,
      port: String(cluster.port),
      username: user,
      password,
      database: APP_DATABASE,
    });
  }

  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}

/** Resolves with the next event of `name` that satisfies `matches`. */
export function nextEvent<K extends keyof HotloadKnexEventMap>(
  events: HotloadKnexEvents,
  name: K,
  matches: (...args: HotloadKnexEventMap[K]) => boolean = () => true,
): Promise<HotloadKnexEventMap[K][0]> {
  return new Promise((resolve) => {
    const listener = (...args: HotloadKnexEventMap[K]) => {
      if (!matches(...args)) return;
      events.off(name, listener as never);
      resolve(args[0]);
    };
    events.on(name, listener as never);
  });
}

/** Records every hotload event as JSON, to check that no secret ever appears in one. */
export function recordEvents(events: HotloadKnexEvents): string[] {
  const seen: string[] = [];
  for (const name of ['switch', 'verifyFailed', 'drained', 'forceClosed', 'sourceError'] as const) {
    events.on(name, (event: unknown) => {
      seen.push(JSON.stringify({ name, event, message: event instanceof Error ? event.message : undefined }));
    });
  }
  return seen;
}

/**
 * Concurrent workers that run a mix of Knex work (query builder insert and select, raw,
 * a small transaction) back to back until stopped, counting successes and failures.
 */
export class QueryLoad {
  succeeded = 0;
  readonly failures: Error[] = [];
  #stopping = false;
  readonly #workers: Promise<void>[] = [];

  constructor(
    private readonly db: Knex,
    workers: number,
  ) {
    for (let i = 0; i < workers; i++) this.#workers.push(this.#work(i));
  }

  async #work(worker: number): Promise<void> {
    for (let n = 0; !this.#stopping; n++) {
      try {
        await this.#step(worker, n);
        this.succeeded++;
      } catch (error) {
        this.failures.push(error as Error);
      }
    }
  }

  async #step(worker: number, n: number): Promise<void> {
    switch (n % 4) {
      case 0:
        await this.db('items').insert({ note: `w${worker}-${n}` });
        break;
      case 1:
        await this.db('items')
          .where('note', `w${worker}-${n - 1}`)
          .first();
        break;
      case 2:
        await this.db.raw('SELECT session_user, pg_backend_pid()');
        break;
      default:
        await this.db.transaction(async (trx) => {
          const [row] = await trx('items').insert({ note: `t${worker}-${n}` }, ['id']);
          await trx('items')
            .where('id', row.id)
            .update({ note: `t${worker}-${n}-done` });
        });
    }
  }

  /** Resolves once at least `count` more operations have succeeded (bounded by the test timeout). */
  async moreSucceeded(count: number): Promise<void> {
    const target = this.succeeded + count;
    while (this.succeeded < target && this.failures.length === 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#workers);
  }
}
