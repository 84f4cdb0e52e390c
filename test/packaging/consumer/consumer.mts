// Compiled by the packaging test in a fresh npm project (strict, skipLibCheck false, no
// prom-client installed), through the packages' ESM type declarations.

import { reconcileFiles } from 'hotload-claim-reconciler';
import { SourceWatcher } from 'hotload-core';
import { createHotloadKnex, type HotloadKnex, HotloadPgClient } from 'hotload-knex';
import { Pool } from 'hotload-pg';
import knex, { type Knex } from 'knex';
import type pg from 'pg';

const source = { secretDirectory: '/var/run/secrets/db' };

// A hotload Pool is usable wherever a pg.Pool is expected.
export const pool: pg.Pool = new Pool({ max: 2, hotload: { source } });

// The README's Knex set-up, and a knexfile typed Knex.Config carrying the hotload block.
export const knexfile: Knex.Config = {
  client: HotloadPgClient,
  hotload: { source, drainTimeoutMillis: 5_000 },
};
export const db = knex({ client: HotloadPgClient, hotload: { source } });
// @ts-expect-error the hotload block is typed: a misspelt option is an error
knex({ client: HotloadPgClient, hotload: { sourceDirectory: '/var/run/secrets/db' } });

// createHotloadKnex() rows default to knex()'s default (any), so code moved from knex() compiles.
type RecordOf<K> = K extends Knex<infer TRecord, unknown[]> ? TRecord : never;
type IsAny<T> = 0 extends 1 & T ? true : false;
export const rowsLikeKnex: IsAny<RecordOf<HotloadKnex>> = true;
export async function noteIds(): Promise<number[]> {
  const hot = await createHotloadKnex({ hotload: { source } });
  const rows = await hot('notes').select('id');
  return rows.map((row) => row.id);
}

export const exported: [typeof SourceWatcher, typeof reconcileFiles] = [SourceWatcher, reconcileFiles];
