/** TypeORM 1.1.1 on hotload-pg: queries work, and keep working across a password rotation. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { Pool, type SwitchEvent } from 'hotload-pg';
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import type { DataSource } from 'typeorm';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createDataSource } from './data-source.js';
import { NoteEntity } from './note.js';

let cluster: PostgresCluster;
let dir: string;
beforeAll(async () => {
  cluster = await startCluster();
  await cluster.query("CREATE ROLE orm LOGIN PASSWORD 'orm_pw_1'");
  await cluster.query('CREATE DATABASE orm_app OWNER orm');
  dir = await mkdtemp(join(tmpdir(), 'hotload-typeorm-'));
});
afterAll(async () => {
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('runs TypeORM on the hotload driver and survives a password rotation', async () => {
  const secret = join(dir, 'secret');
  const writer = new AtomicSecretWriter(secret);
  const files = (password: string) => ({
    hostname: cluster.host,
    port: String(cluster.port),
    username: 'orm',
    password,
    database: 'orm_app',
  });
  await writer.write(files('orm_pw_1'));
  const dataSource: DataSource = createDataSource(secret, { verifyRetryInitialMillis: 20 });
  await dataSource.initialize();
  try {
    const notes = dataSource.getRepository(NoteEntity);
    await notes.save({ text: 'before the rotation' });

    const pool = (dataSource.driver as unknown as { master: unknown }).master;
    expect(pool).toBeInstanceOf(Pool);
    const switched = new Promise<SwitchEvent>((resolve) => (pool as Pool).once('switch', resolve));
    const drained = new Promise((resolve) => (pool as Pool).once('drained', resolve));
    await cluster.query("ALTER ROLE orm PASSWORD 'orm_pw_2'");
    await writer.write(files('orm_pw_2'));
    const event = await switched;
    expect(event.fromGeneration).toBe(1);

    await notes.save({ text: 'after the rotation' });
    const texts = (await notes.find({ order: { id: 'ASC' } })).map((note) => note.text);
    expect(texts).toEqual(['before the rotation', 'after the rotation']);
    await drained; // the generation on the old password is gone
    expect((pool as Pool).generation).toBe(2);
    expect((pool as Pool).otherGenerations).toEqual([]);
  } finally {
    await dataSource.destroy();
  }
});
