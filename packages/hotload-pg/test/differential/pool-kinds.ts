/**
 * The three pools a differential scenario runs on, built from one set of pg options
 * (connection included). No test-runner imports: the exit scenarios' child process uses it too.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AtomicSecretWriter } from 'hotload-core';
import { Pool } from 'hotload-pg';
import pg from 'pg';

export const POOL_KINDS = ['pg.Pool', 'hotload static', 'hotload source'] as const;
export type PoolKind = (typeof POOL_KINDS)[number];

/**
 * Builds the pool of `kind` from `options`: pg.Pool, hotload-pg's Pool with the same
 * options, or hotload-pg's Pool whose connection fields come from a fresh secret
 * directory holding them instead. `dispose` removes that directory.
 */
export async function createPool(
  kind: PoolKind,
  options: pg.PoolConfig,
): Promise<{ pool: pg.Pool; dispose: () => Promise<void> }> {
  if (kind === 'pg.Pool') return { pool: new pg.Pool(options), dispose: async () => {} };
  if (kind === 'hotload static')
    return { pool: new Pool(options) as unknown as pg.Pool, dispose: async () => {} };
  const { host, port, user, password, database, ...rest } = options;
  const folder = await mkdtemp(join(tmpdir(), 'hotload-pg-differential-'));
  const secretDirectory = join(folder, 'secret');
  await new AtomicSecretWriter(secretDirectory).write({
    hostname: String(host),
    port: String(port),
    username: String(user),
    password: String(password),
    database: String(database),
  });
  const pool = new Pool({ ...rest, hotload: { source: { secretDirectory } } }) as unknown as pg.Pool;
  return { pool, dispose: () => rm(folder, { recursive: true, force: true }) };
}
