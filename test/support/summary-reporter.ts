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

/** Marks a suite skipped for want of something the machine lacks (see kube-test-bed.ts). */
const NOT_RUN = /\[not run: ([^\]]+)\]/;

/**
 * The tests skipped because the machine lacks what they need, by reason:
 * `not run: 14 tests (no KUBEBUILDER_ASSETS and no built control plane ...)`.
 */
export function formatNotRun(reasons: ReadonlyMap<string, number>): string {
  if (reasons.size === 0) return '';
  const rows = [...reasons].map(([reason, count]) => `  ${count} test${count === 1 ? '' : 's'}: ${reason}`);
  return `not run (the machine lacks what they need):\n${rows.join('\n')}\n`;
}

function fileTime(module: TestModule): FileTime {
  const { collectDuration, duration } = module.diagnostic();
  return { file: module.relativeModuleId, millis: collectDuration + duration };
}

/**
 * Prints the slowest test files with their durations (so the suite's time is visible),
 * the unhandled errors (if any), then one closing line,
 * `tests: N passed, N failed, N skipped[, N not run][, N unhandled errors]`, which CI and scripts read
 * regardless of vitest's own summary layout: it stays the last line.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ): void {
    const counts = { passed: 0, failed: 0, skipped: 0, notRun: 0 };
    const notRun = new Map<string, number>();
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        const reason = NOT_RUN.exec(test.fullName)?.[1];
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else if (reason !== undefined) {
          counts.notRun++;
          notRun.set(reason, (notRun.get(reason) ?? 0) + 1);
        } else counts.skipped++;
      }
    }
    process.stdout.write(formatSlowest(slowestFiles(testModules.map(fileTime))));
    process.stdout.write(formatUnhandled(unhandledErrors));
    process.stdout.write(formatNotRun(notRun));
    const unhandled = unhandledErrors.length > 0 ? `, ${unhandledErrors.length} unhandled errors` : '';
    const missing = counts.notRun > 0 ? `, ${counts.notRun} not run` : '';
    process.stdout.write(
      `tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped${missing}${unhandled}\n`,
    );
  }
}
