import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script (no declarations); the shapes are typed below.
import { parseArgs as parse, readSummary as read } from '../../scripts/test-stress.mjs';

interface StressOptions {
  runs: number;
  load: number;
  build: boolean;
  filters: string[];
}
interface Summary {
  summary: string | undefined;
  failures: string[];
  unhandled: string[];
}
const parseArgs = parse as (argv: string[]) => StressOptions;
const readSummary = read as (text: string) => Summary;

describe('test:stress (scripts/test-stress.mjs)', () => {
  it('runs the suite 3 times under one busy loop per core unless told otherwise', () => {
    expect(parseArgs([])).toEqual({ runs: 3, load: availableParallelism(), build: true, filters: [] });
    expect(parseArgs(['--runs', '5', '--load=4', '--no-build', 'packages/hotload-pg'])).toEqual({
      runs: 5,
      load: 4,
      build: false,
      filters: ['packages/hotload-pg'],
    });
    expect(() => parseArgs(['--runs', '0'])).toThrow(/--runs needs a whole number of at least 1/);
    expect(() => parseArgs(['--load', 'x'])).toThrow(/--load needs a whole number/);
    expect(() => parseArgs(['--run', '2'])).toThrow(/unknown option --run/);
    // `pnpm run test:stress -- --runs 2` hands the script its `--` (npm drops it).
    expect(parseArgs(['--', '--runs', '2']).runs).toBe(2);
  });

  it("reads the summary reporter's closing line, failures and unhandled errors from a run's output", () => {
    const log = [
      ' \u001b[31mFAIL\u001b[39m  a.test.ts > suite > test',
      'slowest test files:',
      '    1.2 s  a.test.ts',
      'failed:',
      '  a.test.ts > suite > test',
      '    expected 1 to be 2',
      'unhandled errors:',
      '  Error: boom',
      '    at frame (file.ts:1:1)',
      'tests: 4 passed, 1 failed, 0 skipped, 1 unhandled errors',
      'JSON report written',
      '',
    ].join('\n');
    expect(readSummary(log)).toEqual({
      summary: 'tests: 4 passed, 1 failed, 0 skipped, 1 unhandled errors',
      failures: ['  a.test.ts > suite > test', '    expected 1 to be 2'],
      unhandled: ['  Error: boom'],
    });
    expect(readSummary('killed\n')).toEqual({ summary: undefined, failures: [], unhandled: [] });
  });
});
