import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parseDemoCommand } from './cli-options.js';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

describe("the demo's command line", () => {
  it('runs with the defaults, and allows --rotations 0 (a move-only run)', () => {
    expect(parseDemoCommand([])).toEqual({
      kind: 'run',
      durationSeconds: 20,
      rotations: 4,
      concurrency: 8,
      json: false,
    });
    expect(parseDemoCommand(['--rotations', '0', '--duration', '2.5'])).toEqual({
      kind: 'run',
      durationSeconds: 2.5,
      rotations: 0,
      concurrency: 8,
      json: false,
    });
    expect(parseDemoCommand(['--json'])).toMatchObject({ kind: 'run', json: true });
    expect(parseDemoCommand(['-h'])).toEqual({ kind: 'help' });
  });

  it.each([
    [['--rotations', '2.5'], '--rotations must be a whole number >= 0, got "2.5"'],
    [['--rotations=-1'], '--rotations must be a whole number >= 0, got "-1"'],
    [['--rotations', '1e3'], '--rotations must be a whole number >= 0, got "1e3"'],
    [['--concurrency', '0'], '--concurrency must be a whole number >= 1, got "0"'],
    [['--duration', 'soon'], '--duration must be a positive number of seconds, got "soon"'],
    [['--bogus'], "Unknown option '--bogus'"],
    [['extra'], "Unexpected argument 'extra'"],
  ])('refuses %j with a one-line usage error', (args, message) => {
    expect(parseDemoCommand(args)).toEqual({ kind: 'usage-error', message });
  });

  it('an unknown option prints one line pointing at --help and exits 2 (no stack trace)', async () => {
    const failure = await run(process.execPath, ['--import', 'tsx', 'examples/demo/main.ts', '--bogus'], {
      cwd: repoRoot,
    }).then(
      () => undefined,
      (error: { code?: number; stderr?: string; stdout?: string }) => error,
    );
    expect(failure?.code).toBe(2);
    expect(failure?.stdout).toBe('');
    expect(failure?.stderr).toBe(
      "demo: Unknown option '--bogus' (npm run demo -- --help lists the options)\n",
    );
  });
});
