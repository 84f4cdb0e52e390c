import { expect, it } from 'vitest';
import { runKnexExample } from './example.js';

it('the Knex example switches users twice under load without a failed query', async () => {
  const lines: string[] = [];
  const result = await runKnexExample((line) => lines.push(line));
  expect(result.failed).toBe(0);
  expect(result.succeeded).toBeGreaterThan(0);
  expect(result.switches.map((s) => s.user)).toEqual(['app_b', 'app_a']);
  expect(lines.filter((line) => line.startsWith('drained'))).toHaveLength(2);
});
