/** Validation findings shared by the claim and config loaders. */
import type { z } from 'zod';

/** One finding about an input document. Never contains a secret value. */
export interface Problem {
  readonly severity: 'error' | 'warning';
  /** File the finding is about. */
  readonly file: string;
  /** Dotted path inside the document, e.g. `spec.userName`; empty for the whole document. */
  readonly path: string;
  readonly message: string;
  /** `namespace/name` of the claim, when known. */
  readonly claim?: string;
}

/** Turns zod issues into {@link Problem}s; unknown keys become one error per key. */
export function problemsFromZod(
  issues: readonly z.core.$ZodIssue[],
  file: string,
  prefix: string,
  claim?: string,
): Problem[] {
  const problems: Problem[] = [];
  for (const issue of issues) {
    const base = joinPath(prefix, issue.path.map(String).join('.'));
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        problems.push({
          severity: 'error',
          file,
          path: joinPath(base, key),
          message: 'unknown field',
          claim,
        });
      }
    } else {
      problems.push({ severity: 'error', file, path: base, message: issue.message, claim });
    }
  }
  return problems;
}

/** `a` + `.` + `b`, skipping empty parts. */
export function joinPath(a: string, b: string): string {
  return a && b ? `${a}.${b}` : a || b;
}

/** One line per problem, for humans. */
export function formatProblem(problem: Problem): string {
  const where = [problem.file, problem.claim, problem.path].filter(Boolean).join(' ');
  return `${problem.severity}: ${where}: ${problem.message}`;
}
