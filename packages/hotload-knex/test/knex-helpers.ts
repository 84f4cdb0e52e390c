/** Knex-specific test helpers: waiting for hotload events, and a steady Knex query load. */
import type { HotloadKnexEventMap, HotloadKnexEvents } from 'hotload-knex';
import type { Knex } from 'knex';

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
