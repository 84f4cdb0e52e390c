import { describe, expect, it } from 'vitest';
import type { PostgresJsQuery } from '../src/postgres-js-internals.js';
import { type RunningEntry, RunningQueries } from '../src/running-queries.js';

/** An entry standing for one query (a force-close only hands the query on to be cancelled). */
function entry(name: string): RunningEntry {
  return { query: { name } as unknown as PostgresJsQuery, slot: -1 };
}

const names = (queries: PostgresJsQuery[]): string[] =>
  queries.map((query) => (query as unknown as { name: string }).name).sort();

describe('RunningQueries (the queries a force-close cancels)', () => {
  it('keeps the queries added and not yet removed, whatever the order they leave in', () => {
    const running = new RunningQueries();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(entry) as [
      RunningEntry,
      RunningEntry,
      RunningEntry,
      RunningEntry,
    ];
    for (const each of [a, b, c, d]) running.add(each);
    running.delete(b); // from the middle: the last one takes its place
    running.delete(b); // twice: no effect
    running.delete(d);
    running.add(b); // back in, after leaving
    expect(names(running.takeAll())).toEqual(['a', 'b', 'c']);
    expect([a, b, c, d].map((each) => each.slot)).toEqual([-1, -1, -1, -1]);
    expect(running.takeAll()).toEqual([]);
  });

  it('ignores an entry that is in another one', () => {
    const first = new RunningQueries();
    const second = new RunningQueries();
    const a = entry('a');
    const b = entry('b');
    first.add(a);
    second.add(b); // both at slot 0
    first.delete(b);
    expect(names(first.takeAll())).toEqual(['a']);
    expect(names(second.takeAll())).toEqual(['b']);
  });
});
