/** Validation findings shared by the claim and config loaders. */
import type { z } from 'zod';

/** One finding about an input document. Never contains a secret value. */
export interface Problem {
  /** `error`: the document (or claim) is refused; `warning`: accepted, but something in it is ignored. */
  readonly severity: 'error' | 'warning';
  /** File the finding is about. */
  readonly file: string;
  /** Dotted path inside the document, e.g. `spec.userName`; empty for the whole document. */
  readonly path: string;
  /** What is wrong with the value at `path`, in words (never the value of a secret). */
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
          message: 'is an unknown field',
          claim,
        });
      }
    } else {
      problems.push({ severity: 'error', file, path: base, message: inWords(issue), claim });
    }
  }
  return problems;
}

/**
 * A zod issue as words that follow the field's path ("spec.instanceLabel is required"),
 * not the validator's raw text ("Invalid input: expected string, received undefined").
 * Messages the schemas set themselves are kept.
 */
function inWords(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return /received undefined$/.test(issue.message) ? 'is required' : `must be ${article(issue.expected)}`;
    case 'invalid_value':
      return `must be ${issue.values.map((value) => JSON.stringify(value)).join(' or ')}`;
    case 'too_small':
      return /^Too small/.test(issue.message) ? `must be at least ${String(issue.minimum)}` : issue.message;
    case 'too_big':
      return /^Too big/.test(issue.message) ? `must be at most ${String(issue.maximum)}` : issue.message;
    case 'invalid_union':
      return 'has a value of the wrong kind';
    default:
      return issue.message;
  }
}

function article(type: string): string {
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type === 'object' ? 'mapping' : type}`;
}

/** `a` + `.` + `b`, skipping empty parts. */
export function joinPath(a: string, b: string): string {
  return a && b ? `${a}.${b}` : a || b;
}

/**
 * One line per problem, for humans:
 * `error: claims/a.yaml (claim default/a): spec.userName is required`. A message phrased
 * to follow its field ("is …", "must …") reads on from the path; any other follows a
 * colon.
 */
export function formatProblem(problem: Problem): string {
  const where = `${problem.file}${problem.claim ? ` (claim ${problem.claim})` : ''}`;
  return `${problem.severity}: ${where}: ${describeField(problem.path, problem.message)}`;
}

/** `spec.port must be …` / `spec: one of … is required`: a message after its field path. */
export function describeField(path: string, message: string): string {
  if (!path) return message;
  return /^(is|must|has|needs) /.test(message) ? `${path} ${message}` : `${path}: ${message}`;
}

/** A YAML parser message on one line: its code frame (which may quote a secret) dropped. */
export function yamlErrorText(message: string | undefined): string {
  return `invalid YAML: ${(message ?? 'unreadable').split('\n')[0]!.replace(/:$/, '')}`;
}
