/** The text that stands in for every secret value in strings, JSON and inspect output. */
export const REDACTED = '[REDACTED]';

/** Keeps a secret out of JSON, `toString` and `util.inspect` while it sits in an object. */
export function redactIfPresent(value: string | undefined): string | undefined {
  return value === undefined ? undefined : REDACTED;
}

/** An error copied without anything that could carry a secret: only name, message and code. */
export class RedactedError extends Error {
  constructor(
    message: string,
    /** The original error's `name`. */
    override readonly name: string,
    /** The original error's `code` (a SQLSTATE, an errno ...), when it had a string one. */
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/** The password of a `scheme://user:password@` URI: redacted whatever it is. */
const URI_PASSWORD = /(\b[a-z][a-z0-9+.-]*:\/\/[^:/?#@\s]*:)[^@\s]*@/gi;

/**
 * Copies `error` keeping only its name, message and code, with every occurrence of each
 * secret in the message replaced by {@link REDACTED}: as is, and URI-encoded (as it appears
 * in a connection string an error may echo). The password of any `postgres://user:pw@`
 * URI in the message is redacted too. Used for every error that leaves a pool, a watcher
 * or the reconciler in an event or a log line: pg errors can carry the client, its config
 * or a cause chain.
 */
export function redactError(error: unknown, secrets: ReadonlyArray<string | undefined>): RedactedError {
  const source = error instanceof Error ? error : new Error(String(error));
  let message = source.message;
  for (const secret of secrets) {
    if (!secret) continue;
    for (const form of new Set([secret, encodeURIComponent(secret), encodeURI(secret)])) {
      message = message.split(form).join(REDACTED);
    }
  }
  message = message.replace(URI_PASSWORD, `$1${REDACTED}@`);
  const code = (source as { code?: unknown }).code;
  return new RedactedError(message, source.name, typeof code === 'string' ? code : undefined);
}
