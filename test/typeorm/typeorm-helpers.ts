/** TypeORM test helpers: the hotload Pool behind a DataSource, its events, a steady load. */
import type { Pool, PoolEvents } from 'hotload-pg';
import { nextEvent, WorkerLoad } from 'hotload-test-support';
import type { DataSource } from 'typeorm';
import { ItemEntity } from './item.js';

/** The hotload-pg Pool TypeORM built from the `driver` module. */
export function hotloadPoolOf(dataSource: DataSource): Pool {
  return (dataSource.driver as unknown as { master: Pool }).master;
}

type HotloadEvent = 'switch' | 'verifyFailed' | 'drained' | 'forceClosed' | 'sourceError';

/** Resolves with the next `name` event of `pool` that satisfies `matches`. */
export function nextPoolEvent<K extends HotloadEvent>(
  pool: Pool,
  name: K,
  matches: (event: PoolEvents[K][0]) => boolean = () => true,
): Promise<PoolEvents[K][0]> {
  return nextEvent(pool, name, matches);
}

/**
 * Concurrent workers running a mix of TypeORM work back to back until stopped: repository
 * insert and find, a raw query, `dataSource.transaction`, and a `QueryRunner` transaction;
 * counting successes and failures.
 */
export class TypeOrmLoad extends WorkerLoad {
  constructor(dataSource: DataSource, workers: number) {
    super(workers, (worker, n) => step(dataSource, `w${worker}-${n}`, n));
  }
}

async function step(dataSource: DataSource, note: string, n: number): Promise<void> {
  const items = dataSource.getRepository(ItemEntity);
  switch (n % 5) {
    case 0:
      await items.insert({ note });
      break;
    case 1:
      await items.findOneBy({ note });
      break;
    case 2:
      await dataSource.query('SELECT session_user, pg_backend_pid()');
      break;
    case 3:
      await dataSource.transaction(async (manager) => {
        const { identifiers } = await manager.insert(ItemEntity, { note });
        await manager.update(ItemEntity, identifiers[0] as { id: number }, { note: `${note}-done` });
      });
      break;
    default: {
      const runner = dataSource.createQueryRunner();
      await runner.connect();
      try {
        await runner.startTransaction();
        await runner.manager.insert(ItemEntity, { note });
        await runner.commitTransaction();
      } catch (error) {
        if (runner.isTransactionActive) await runner.rollbackTransaction();
        throw error;
      } finally {
        await runner.release();
      }
    }
  }
}
