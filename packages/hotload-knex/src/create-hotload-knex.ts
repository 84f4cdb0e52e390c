import knex, { type Knex } from 'knex';
import { type HotloadKnexConfig, type HotloadKnexLifecycle, HotloadPgClient } from './hotload-pg-client.js';
import type { KnexDefaultRecord } from './knex-typing.js';

/** A Knex instance on a hotload source, with its lifecycle at `hotload`. */
export type HotloadKnex<TRecord extends {} = KnexDefaultRecord, TResult = unknown[]> = Knex<
  TRecord,
  TResult
> & {
  /** Events, `ready()`, the current generation and config (same object as `knex.client.hotload`). */
  readonly hotload: HotloadKnexLifecycle;
};

/**
 * Builds a Knex instance on {@link HotloadPgClient} and waits until the source has been
 * read and is being watched, so a broken source fails here (with a `SourceError`)
 * rather than on the first query. When it rejects, nothing is left running.
 */
export async function createHotloadKnex<TRecord extends {} = KnexDefaultRecord, TResult = unknown[]>(
  config: Omit<HotloadKnexConfig, 'client'>,
): Promise<HotloadKnex<TRecord, TResult>> {
  const instance = knex<TRecord, TResult>({ ...config, client: HotloadPgClient } as Knex.Config);
  const client = instance.client as HotloadPgClient;
  try {
    await client.hotload.ready();
  } catch (error) {
    await instance.destroy();
    throw error;
  }
  return Object.assign(instance, { hotload: client.hotload });
}
