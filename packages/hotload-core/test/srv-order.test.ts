import { describe, expect, it } from 'vitest';
import { orderSrvRecords } from '../src/index.js';

const record = (name: string, priority: number, weight: number, port = 5432) => ({
  name,
  priority,
  weight,
  port,
});
const seed = (n: number) => new Uint8Array(new Uint32Array([n, 7, 11, 13]).buffer);

describe('orderSrvRecords (RFC 2782)', () => {
  it('puts lower priorities first whatever the weights', () => {
    const ordered = orderSrvRecords([record('backup', 20, 100), record('primary', 10, 1)], seed(1));
    expect(ordered.map((h) => h.host)).toEqual(['primary', 'backup']);
  });

  it('orders one priority by weight: a target of weight 30 comes first about 3 times in 4 against one of 10', () => {
    let heavyFirst = 0;
    const draws = 4000;
    for (let n = 0; n < draws; n++) {
      const [first] = orderSrvRecords([record('light', 10, 10), record('heavy', 10, 30)], seed(n));
      if (first?.host === 'heavy') heavyFirst++;
    }
    expect(heavyFirst / draws).toBeGreaterThan(0.7);
    expect(heavyFirst / draws).toBeLessThan(0.8);
  });

  it('gives weight 0 a small chance only, and the same answer the same order for one seed', () => {
    let zeroFirst = 0;
    for (let n = 0; n < 1000; n++) {
      const [first] = orderSrvRecords([record('zero', 1, 0), record('one', 1, 1)], seed(n));
      if (first?.host === 'zero') zeroFirst++;
    }
    expect(zeroFirst).toBeLessThan(50);
    const answer = [record('a', 1, 5, 1), record('b', 1, 5, 2), record('c', 1, 5, 3)];
    expect(orderSrvRecords(answer, seed(3))).toEqual(orderSrvRecords([...answer].reverse(), seed(3)));
  });
});
