/** Knex-specific test helpers: waiting for hotload events, and a steady Knex query load. */
import type { HotloadKnexEventMap, HotloadKnexEvents } from 'hotload-knex';
import { nextEvent as nextPayload, WorkerLoad } from 'hotload-test-support';
import type { Knex } from 'knex';

/** Resolves with the next event of `name` that satisfies `matches`. */
export function nextEvent<K extends keyof HotloadKnexEventMap>(
  events: HotloadKnexEvents,
  name: K,
  matches: (event: HotloadKnexEventMap[K][0]) => boolean = () => true,
): Promise<HotloadKnexEventMap[K][0]> {
  return nextPayload(events, name, matches);
}

/** Records every hotload event as emitted, to scan with `findLeaks` for secrets. */
export function recordEvents(events: HotloadKnexEvents): unknown[] {
  const seen: unknown[] = [];
  for (const name of ['switch', 'verifyFailed', 'drained', 'forceClosed', 'sourceError'] as const) {
    events.on(name, (event: unknown) => seen.push({ name, event }));
  }
  return seen;
}

/**
 * Concurrent workers that run a mix of Knex work (query builder insert and select, raw,
 * a small transaction) back to back until stopped, counting successes and failures.
 */
export class QueryLoad extends WorkerLoad {
  constructor(db: Knex, workers: number) {
    super(workers, (worker, n) => step(db, worker, n));
  }
}

async function step(db: Knex, worker: number, n: number): Promise<void> {
  switch (n % 4) {
    case 0:
      await db('items').insert({ note: `w${worker}-${n}` });
      break;
    case 1:
      await db('items')
        .where('note', `w${worker}-${n - 1}`)
        .first();
      break;
    case 2:
      await db.raw('SELECT session_user, pg_backend_pid()');
      break;
    default:
      await db.transaction(async (trx) => {
        const [row] = await trx('items').insert({ note: `t${worker}-${n}` }, ['id']);
        await trx('items')
          .where('id', row.id)
          .update({ note: `t${worker}-${n}-done` });
      });
  }
}
