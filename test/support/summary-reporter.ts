import type { Reporter, SerializedError, TestModule } from 'vitest/node';

/** How many of the slowest test files the summary lists. */
const SLOWEST_FILES = 10;

/** One test file's time: importing it (and its suite callbacks), then its tests and hooks. */
export interface FileTime {
  readonly file: string;
  readonly millis: number;
}

/** The `limit` slowest files, slowest first. */
export function slowestFiles(files: ReadonlyArray<FileTime>, limit = SLOWEST_FILES): FileTime[] {
  return [...files].sort((a, b) => b.millis - a.millis).slice(0, limit);
}

/** The lines printed for {@link slowestFiles}: a heading, then `  12.3 s  path/to/file.test.ts`. */
export function formatSlowest(files: ReadonlyArray<FileTime>): string {
  if (files.length === 0) return '';
  const rows = files.map(({ file, millis }) => `${(millis / 1000).toFixed(1).padStart(7)} s  ${file}`);
  return `slowest test files:\n${rows.join('\n')}\n`;
}

/** Stack lines kept per unhandled error in the summary. */
const ERROR_STACK_LINES = 8;

/**
 * The unhandled errors again, short (name, message, the first stack lines), so that the
 * tail of a long log (all a CI report may keep) still says what failed the run.
 */
export function formatUnhandled(
  errors: ReadonlyArray<Pick<SerializedError, 'name' | 'message' | 'stack'>>,
): string {
  if (errors.length === 0) return '';
  const blocks = errors.map((error) => {
    const stack = (error.stack ?? '')
      .split('\n')
      .filter((line) => line.trimStart().startsWith('at '))
      .slice(0, ERROR_STACK_LINES);
    return [
      `  ${error.name ?? 'Error'}: ${error.message}`,
      ...stack.map((line) => `    ${line.trim()}`),
    ].join('\n');
  });
  return `unhandled errors:\n${blocks.join('\n')}\n`;
}

function fileTime(module: TestModule): FileTime {
  const { collectDuration, duration } = module.diagnostic();
  return { file: module.relativeModuleId, millis: collectDuration + duration };
}

/**
 * Prints the slowest test files with their durations (so the suite's time is visible),
 * the unhandled errors (if any), then one closing line,
 * `tests: N passed, N failed, N skipped[, N unhandled errors]`, which CI and scripts read
 * regardless of vitest's own summary layout: it stays the last line.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
    }
    process.stdout.write(formatSlowest(slowestFiles(testModules.map(fileTime))));
    process.stdout.write(formatUnhandled(unhandledErrors));
    const unhandled = unhandledErrors.length > 0 ? `, ${unhandledErrors.length} unhandled errors` : '';
    process.stdout.write(
      `tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped${unhandled}\n`,
    );
  }
}
