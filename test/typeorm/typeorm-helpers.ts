/** TypeORM test helpers: the hotload Pool behind a DataSource, its events, a steady load. */
import type { Pool, PoolEvents } from 'hotload-pg';
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
  return new Promise((resolve) => {
    const listener = (event: PoolEvents[K][0]) => {
      if (!matches(event)) return;
      pool.off(name, listener as never);
      resolve(event);
    };
    pool.on(name, listener as never);
  });
}

/**
 * Concurrent workers running a mix of TypeORM work back to back until stopped: repository
 * insert and find, a raw query, `dataSource.transaction`, and a `QueryRunner` transaction;
 * counting successes and failures.
 */
export class TypeOrmLoad {
  succeeded = 0;
  readonly failures: Error[] = [];
  #stopping = false;
  readonly #workers: Promise<void>[] = [];

  constructor(
    private readonly dataSource: DataSource,
    workers: number,
  ) {
    for (let i = 0; i < workers; i++) this.#workers.push(this.#work(i));
  }

  async #work(worker: number): Promise<void> {
    for (let n = 0; !this.#stopping; n++) {
      try {
        await this.#step(`w${worker}-${n}`, n);
        this.succeeded++;
      } catch (error) {
        this.failures.push(error as Error);
      }
    }
  }

  async #step(note: string, n: number): Promise<void> {
    const items = this.dataSource.getRepository(ItemEntity);
    switch (n % 5) {
      case 0:
        await items.insert({ note });
        break;
      case 1:
        await items.findOneBy({ note });
        break;
      case 2:
        await this.dataSource.query('SELECT session_user, pg_backend_pid()');
        break;
      case 3:
        await this.dataSource.transaction(async (manager) => {
          const { identifiers } = await manager.insert(ItemEntity, { note });
          await manager.update(ItemEntity, identifiers[0] as { id: number }, { note: `${note}-done` });
        });
        break;
      default: {
        const runner = this.dataSource.createQueryRunner();
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
