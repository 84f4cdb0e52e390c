import { ConnectionBudget } from 'hotload-core';
import { describe, expect, it } from 'vitest';

describe('ConnectionBudget', () => {
  it('lets connections open while fewer than max, then serves waiters first come first served as others close', async () => {
    const budget = new ConnectionBudget(() => 2);
    await budget.take();
    await budget.take();
    const order: string[] = [];
    const first = budget.take().then(() => order.push('first'));
    const second = budget.take().then(() => order.push('second'));
    expect(budget.waiting).toBe(2);
    budget.give();
    await first;
    expect(order).toEqual(['first']);
    expect(budget.open).toBe(2);
    budget.give();
    await second;
    expect(order).toEqual(['first', 'second']);
  });

  it('counts the verify connection beyond max (the + 1), and no other until the count is under max again', async () => {
    const budget = new ConnectionBudget(() => 2);
    await budget.take();
    await budget.take();
    budget.takeVerify();
    expect(budget.open).toBe(3);
    let granted = false;
    const next = budget.take().then(() => {
      granted = true;
    });
    budget.give(); // 2 open: still not fewer than max
    await Promise.resolve();
    expect(granted).toBe(false);
    budget.give();
    await next;
    expect(budget.open).toBe(2);
  });

  it('rejects a waiter with the abort reason and takes it out of the queue', async () => {
    const budget = new ConnectionBudget(() => 1);
    await budget.take();
    const abort = new AbortController();
    const waiting = budget.take(abort.signal);
    abort.abort(new Error('generation discarded'));
    await expect(waiting).rejects.toThrow('generation discarded');
    expect(budget.waiting).toBe(0);
    budget.give();
    expect(budget.open).toBe(0);
  });

  it('tryTake counts a connection only while under max and nobody waits before it', async () => {
    const budget = new ConnectionBudget(() => 2);
    expect(budget.tryTake()).toBe(true);
    expect(budget.tryTake()).toBe(true);
    expect(budget.tryTake()).toBe(false);
    expect(budget.open).toBe(2);
    const waiter = budget.take();
    budget.give(); // the waiter is granted first
    await waiter;
    expect(budget.tryTake()).toBe(false);
    const queued = budget.take();
    budget.give();
    budget.give(); // one to the queued waiter, one free
    await queued;
    expect(budget.tryTake()).toBe(true);
    expect(budget.open).toBe(2);
  });
});
