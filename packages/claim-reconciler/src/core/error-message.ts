import { redactError } from 'hotload-core';

/**
 * The message of an error the reconciler reports (outcome, status file, CLI, logs). The
 * reconciler never puts a password in its own messages, but an error from pg or the file
 * system may echo a connection string: `redactError` strips any URI password.
 */
export function errorMessage(error: unknown): string {
  return redactError(error, []).message;
}
