import { describe, expect, it } from 'vitest';
import {
  formatFailures,
  formatNotRun,
  formatSlowest,
  formatUnhandled,
  slowestFiles,
} from '../support/summary-reporter.js';

describe('summary reporter', () => {
  it('lists the slowest files first, with their durations in seconds', () => {
    const files = [
      { file: 'a.test.ts', millis: 1_200 },
      { file: 'b.test.ts', millis: 45_678 },
      { file: 'c.test.ts', millis: 300 },
    ];
    expect(formatSlowest(slowestFiles(files, 2))).toBe(
      'slowest test files:\n   45.7 s  b.test.ts\n    1.2 s  a.test.ts\n',
    );
  });

  it('prints nothing when no file ran', () => {
    expect(formatSlowest(slowestFiles([]))).toBe('');
  });

  it('repeats unhandled errors shortly: name, message and the first stack frames only', () => {
    const stack = [
      'Error: boom',
      ...Array.from({ length: 12 }, (_, i) => `    at frame${i} (file.ts:${i}:1)`),
    ].join('\n');
    const text = formatUnhandled([{ name: 'TypeError', message: 'boom', stack }]);
    expect(text.split('\n')).toEqual([
      'unhandled errors:',
      '  TypeError: boom',
      ...Array.from({ length: 8 }, (_, i) => `    at frame${i} (file.ts:${i}:1)`),
      '',
    ]);
    expect(formatUnhandled([])).toBe('');
  });

  it('counts the tests not run for want of something, by reason', () => {
    expect(formatNotRun(new Map([['Go is not installed', 3]]))).toBe(
      'not run (the machine lacks what they need):\n  3 tests: Go is not installed\n',
    );
    expect(formatNotRun(new Map())).toBe('');
  });

  it('lists the failures, each with the first line of its error, cut at 200 characters', () => {
    const text = formatFailures([
      { where: 'a.test.ts > suite > test', error: 'expected 1 to be 2\n- Expected\n+ Received' },
      { where: 'b.test.ts > hooked', error: 'x'.repeat(300) },
      { where: 'c.test.ts' },
    ]);
    expect(text.split('\n')).toEqual([
      'failed:',
      '  a.test.ts > suite > test',
      '    expected 1 to be 2',
      '  b.test.ts > hooked',
      `    ${'x'.repeat(199)}…`,
      '  c.test.ts',
      '',
    ]);
    expect(formatFailures([])).toBe('');
  });
});
