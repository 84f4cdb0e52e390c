import type { Reporter, TestModule } from 'vitest/node';

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

function fileTime(module: TestModule): FileTime {
  const { collectDuration, duration } = module.diagnostic();
  return { file: module.relativeModuleId, millis: collectDuration + duration };
}

/**
 * Prints the slowest test files with their durations (so the suite's time is visible),
 * then one closing line, `tests: N passed, N failed, N skipped`, which CI and scripts
 * read regardless of vitest's own summary layout: it stays the last line.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
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
    process.stdout.write(
      `tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`,
    );
  }
}
