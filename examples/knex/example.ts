/**
 * The Knex example end to end on an embedded PostgreSQL: a database laid out like the
 * claim reconciler lays it out (base role owning the tables, two login users), a secret
 * directory written like the kubelet writes it, an application doing steady Knex work,
 * and two credential switches in the middle of it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSecretAtomically } from 'hotload-core';
import type { HotloadKnex, SwitchEvent } from 'hotload-knex';
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import type { Knex } from 'knex';
import { createDb } from './db.js';

/** What one run of the example did. */
export interface KnexExampleResult {
  readonly succeeded: number;
  readonly failed: number;
  readonly switches: readonly SwitchEvent[];
}

const password = () => randomBytes(18).toString('base64url');

export async function runKnexExample(log: (line: string) => void = console.log): Promise<KnexExampleResult> {
  const cluster = await startCluster();
  const secretDirectory = mkdtempSync(join(tmpdir(), 'hotload-knex-example-'));
  let db: HotloadKnex | undefined;
  try {
    const passwords = { app_a: password(), app_b: password() };
    await createDatabase(cluster, passwords);
    await writeSecret(cluster, secretDirectory, 'app_a', passwords.app_a);

    db = await createDb(secretDirectory);
    const switches: SwitchEvent[] = [];
    db.hotload.on('switch', (event) => {
      switches.push(event);
      log(`switch: generation ${event.toGeneration} now connects as ${event.user}`);
    });
    db.hotload.on('drained', ({ generation }) => log(`drained: generation ${generation} closed`));
    await db.migrate.latest({ migrationSource: notesMigrations });

    const work = new SteadyWork(db);
    for (const user of ['app_b', 'app_a'] as const) {
      await work.untilMore(100);
      // The claim reconciler's rotation: fresh password on the inactive user, then the secret.
      passwords[user] = password();
      await cluster.query(`ALTER ROLE ${user} PASSWORD '${passwords[user]}'`);
      const drained = new Promise((resolve) => db?.hotload.once('drained', resolve));
      await writeSecret(cluster, secretDirectory, user, passwords[user]);
      await drained;
    }
    await work.untilMore(100);
    await work.stop();
    log(`${work.succeeded} queries succeeded, ${work.failed} failed`);
    return { succeeded: work.succeeded, failed: work.failed, switches };
  } finally {
    await db?.destroy();
    await cluster.stop();
    rmSync(secretDirectory, { recursive: true, force: true });
  }
}

async function createDatabase(cluster: PostgresCluster, passwords: Record<'app_a' | 'app_b', string>) {
  await cluster.query('CREATE ROLE app NOLOGIN');
  for (const [user, secret] of Object.entries(passwords)) {
    await cluster.query(`CREATE ROLE ${user} LOGIN IN ROLE app PASSWORD '${secret}'`);
    await cluster.query(`ALTER ROLE ${user} SET role = 'app'`);
  }
  await cluster.query('CREATE DATABASE appdb OWNER app');
  await cluster.query('ALTER SCHEMA public OWNER TO app', [], 'appdb');
}

function writeSecret(cluster: PostgresCluster, dir: string, user: string, secret: string) {
  return writeSecretAtomically(dir, {
    hostname: cluster.host,
    port: String(cluster.port),
    username: user,
    password: secret,
    database: 'appdb',
  });
}

const notesMigrations: Knex.MigrationSource<string> = {
  getMigrations: async () => ['001_notes'],
  getMigrationName: (name) => name,
  getMigration: async () => ({
    up: (knex) =>
      knex.schema.createTable('notes', (t) => {
        t.increments('id').primary();
        t.text('body');
      }),
    down: (knex) => knex.schema.dropTable('notes'),
  }),
};

/** Four workers inserting and reading notes, each in a transaction, back to back. */
class SteadyWork {
  succeeded = 0;
  failed = 0;
  #stopping = false;
  readonly #workers: Promise<void>[];

  constructor(private readonly db: HotloadKnex) {
    this.#workers = [0, 1, 2, 3].map((worker) => this.#loop(worker));
  }

  async #loop(worker: number): Promise<void> {
    while (!this.#stopping) {
      try {
        await this.db.transaction(async (trx) => {
          const [note] = await trx('notes').insert({ body: `worker ${worker}` }, ['id']);
          await trx('notes').where('id', note.id).first();
        });
        this.succeeded++;
      } catch {
        this.failed++;
      }
    }
  }

  async untilMore(count: number): Promise<void> {
    const target = this.succeeded + count;
    while (this.succeeded < target) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#workers);
  }
}
