/** The controller's work queue: one reconcile per key at a time, dirty re-runs, backoff. */
import { describe, expect, it } from 'vitest';
import { type WorkOutcome, WorkQueue } from '../src/work-queue.js';

/** A promise with its resolve function. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('WorkQueue', () => {
  it('never runs a key twice at once; an add during its run runs it once more afterwards', async () => {
    const queue = new WorkQueue();
    const gate = deferred();
    const started = deferred();
    let inFlight = 0;
    let maxInFlight = 0;
    let runs = 0;
    const second = deferred();
    const running = queue.run(async () => {
      runs++;
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      if (runs === 1) {
        started.resolve();
        await gate.promise;
      }
      inFlight--;
      if (runs === 2) second.resolve();
      return { kind: 'done' };
    }, 4);
    queue.add('ns/a');
    await started.promise;
    queue.add('ns/a');
    queue.add('ns/a');
    gate.resolve();
    await second.promise;
    queue.stop();
    await running;
    expect(runs).toBe(2);
    expect(maxInFlight).toBe(1);
  });

  it('runs different keys in parallel', async () => {
    const queue = new WorkQueue();
    const both = deferred();
    const seen = new Set<string>();
    const release = deferred();
    const running = queue.run(async (key) => {
      seen.add(key);
      if (seen.size === 2) both.resolve();
      await release.promise;
      return { kind: 'done' };
    }, 2);
    queue.add('ns/a');
    queue.add('ns/b');
    await both.promise;
    release.resolve();
    queue.stop();
    await running;
    expect([...seen].sort()).toEqual(['ns/a', 'ns/b']);
  });

  it('backs off exponentially per key after failures and resets after a success', () => {
    const queue = new WorkQueue({ baseMillis: 10, maxMillis: 50 });
    expect([1, 2, 3, 4].map(() => queue.nextBackoff('k'))).toEqual([10, 20, 40, 50]);
    expect(queue.nextBackoff('other')).toBe(10);
    queue.forget('k');
    expect(queue.nextBackoff('k')).toBe(10);
  });

  it('retries a failed key and honours requeueAfter from a result', async () => {
    const queue = new WorkQueue({ baseMillis: 1, maxMillis: 1 });
    const outcomes: WorkOutcome[] = [
      { kind: 'failed' },
      { kind: 'done', requeueAfterMillis: 1 },
      { kind: 'done' },
    ];
    const third = deferred();
    let runs = 0;
    const running = queue.run(async () => {
      const outcome = outcomes[runs++]!;
      if (runs === 3) third.resolve();
      return outcome;
    }, 1);
    queue.add('ns/a');
    await third.promise;
    queue.stop();
    await running;
    expect(runs).toBe(3);
  });
});
