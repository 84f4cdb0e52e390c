/**
 * Fixtures shared by the driver tests (hotload-knex, TypeORM, ...): a database laid out the way
 * the claim reconciler lays it out (a NOLOGIN base role `app` owning everything, login
 * users `app_a` and `app_b` that act as `app`), a secret directory written the way the
 * kubelet writes one, and what the server says about sessions.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AtomicWriteResult, writeSecretAtomically } from 'hotload-core';
import type { PostgresCluster } from './postgres-cluster.js';

export const APP_DATABASE = 'appdb';
export type AppUser = 'app_a' | 'app_b';

/** Where a secret points: a cluster or a proxy in front of one. */
export type ServerAddress = Pick<PostgresCluster, 'host' | 'port'>;

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
  return lastCountAfterExit(() => sessionsOf(cluster, user), attempts);
}

/**
 * Sessions of the login users in the app database that began before `startedBefore`,
 * polled like {@link sessionsOfAfterExit}. With `startedBefore` taken just before a new
 * secret is written, these are connections made with the old config (no new one can be
 * older than the secret it was made from): after the drain, there must be none, whether
 * the rotation changed the user or only the password.
 */
export async function sessionsStartedBeforeAfterExit(
  cluster: PostgresCluster,
  startedBefore: Date,
  attempts = 200,
): Promise<number> {
  const count = async () => {
    const { rows } = await cluster.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity
        WHERE usename IN ('app_a', 'app_b') AND datname = $1 AND backend_start < $2`,
      [APP_DATABASE, startedBefore.toISOString()],
    );
    return Number(rows[0]?.n ?? 0);
  };
  return lastCountAfterExit(count, attempts);
}

async function lastCountAfterExit(count: () => Promise<number>, attempts: number): Promise<number> {
  let last = await count();
  for (let i = 0; i < attempts && last > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    last = await count();
  }
  return last;
}

/** A temporary secret directory, written atomically like a mounted Kubernetes Secret. */
export class SecretDirectory {
  readonly path = mkdtempSync(join(tmpdir(), 'hotload-knex-secret-'));

  /**
   * Publishes `user`/`password` for `server`: a cluster, or a {@link FaultProxy} in front of
   * one. Resolves what the write did (`swappedAt`: when `..data` was renamed into place).
   */
  write(server: ServerAddress, user: AppUser, password: string): Promise<AtomicWriteResult> {
    return writeSecretAtomically(this.path, {
      hostname: server.host,
      port: String(server.port),
      username: user,
      password,
      database: APP_DATABASE,
    });
  }

  remove(): void {
    rmSync(this.path, { recursive: true, force: true });
  }
}
