/**
 * Scanning what a library emitted (events, log lines, diagnostics messages) for secrets,
 * the way an operator would see them: as JSON (what pino writes), through util.inspect (what
 * console.log and error reporters print), and as the message and stack of every Error inside
 * (which JSON drops: `JSON.stringify(new Error('x'))` is `{}`).
 */
import { inspect } from 'node:util';

/** Every way a captured value could reach an operator. */
export function renderings(value: unknown): string[] {
  return [
    JSON.stringify(value) ?? '',
    inspect(value, { depth: 8, showHidden: true }),
    ...errorTexts(value, new Set()),
  ];
}

/** Message and stack of every Error in `value` (nested in objects, arrays and causes). */
function errorTexts(value: unknown, seen: Set<object>): string[] {
  if (typeof value !== 'object' || value === null || seen.has(value)) return [];
  seen.add(value);
  const own = value instanceof Error ? [value.message, value.stack ?? ''] : [];
  const nested = Object.getOwnPropertyNames(value).flatMap((key) =>
    errorTexts((value as Record<string, unknown>)[key], seen),
  );
  return [...own, ...nested];
}

/** The forms of `secret` that would count as a leak: raw and URI-encoded. */
export function leakForms(secret: string): string[] {
  return [...new Set([secret, encodeURIComponent(secret)])];
}

/**
 * The renderings of `values` that contain any form of any of `secrets` (empty when none
 * leaks), so `expect(findLeaks(events, passwords)).toEqual([])` shows the offending text.
 */
export function findLeaks(values: ReadonlyArray<unknown>, secrets: ReadonlyArray<string>): string[] {
  const forms = secrets.flatMap(leakForms);
  return values.flatMap(renderings).filter((text) => forms.some((form) => text.includes(form)));
}
