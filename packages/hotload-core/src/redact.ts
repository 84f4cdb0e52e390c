/** The text that stands in for every secret value in strings, JSON and inspect output. */
export const REDACTED = '[REDACTED]';

/** Keeps a secret out of JSON, `toString` and `util.inspect` while it sits in an object. */
export function redactIfPresent(value: string | undefined): string | undefined {
  return value === undefined ? undefined : REDACTED;
}
