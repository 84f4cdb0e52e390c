import type { Reporter, SerializedError, TestModule, TestSuite } from 'vitest/node';

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

/** One failure of a run: a failed test, or a suite or file that failed outside its tests. */
export interface Failure {
  /** `file > suite > test` (a suite's or file's own error: `file > suite` or `file`). */
  readonly where: string;
  /** The first line of its (first) error's message, if any. */
  readonly error?: string;
}

/** Characters kept of a failure's error line. */
const FAILURE_ERROR_CHARS = 200;

/**
 * The failures again, one per line with its first error line, so a log's tail (and
 * scripts/test-stress.mjs, which reads this block) says which tests failed.
 */
export function formatFailures(failures: ReadonlyArray<Failure>): string {
  if (failures.length === 0) return '';
  const rows = failures.map(({ where, error }) => {
    const line = error?.split('\n', 1)[0]?.trim() ?? '';
    const short = line.length > FAILURE_ERROR_CHARS ? `${line.slice(0, FAILURE_ERROR_CHARS - 1)}…` : line;
    return short === '' ? `  ${where}` : `  ${where}\n    ${short}`;
  });
  return `failed:\n${rows.join('\n')}\n`;
}

/** A failed test, or the errors of a suite or file outside its tests (collection, beforeAll/afterAll). */
function failuresOf(module: TestModule): Failure[] {
  const failures: Failure[] = [];
  const own = (entity: TestModule | TestSuite, where: string): void => {
    const errors = entity.errors();
    if (errors.length > 0) failures.push({ where, error: errors[0]?.message });
  };
  own(module, module.relativeModuleId);
  for (const suite of module.children.allSuites())
    own(suite, `${module.relativeModuleId} > ${suite.fullName}`);
  for (const test of module.children.allTests('failed')) {
    failures.push({
      where: `${module.relativeModuleId} > ${test.fullName}`,
      error: test.result().errors?.[0]?.message,
    });
  }
  return failures;
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
 * the failed tests and suites (if any), the unhandled errors (if any), then one closing line,
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
    const failures: Failure[] = [];
    for (const module of testModules) {
      failures.push(...failuresOf(module));
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
    process.stdout.write(formatFailures(failures));
    process.stdout.write(formatUnhandled(unhandledErrors));
    process.stdout.write(formatNotRun(notRun));
    const unhandled = unhandledErrors.length > 0 ? `, ${unhandledErrors.length} unhandled errors` : '';
    const missing = counts.notRun > 0 ? `, ${counts.notRun} not run` : '';
    process.stdout.write(
      `tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped${missing}${unhandled}\n`,
    );
  }
}
