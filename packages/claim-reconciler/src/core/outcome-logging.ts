import type { HotloadLogger } from 'hotload-core';
import type { ClaimOutcome } from './claim-outcome.js';

/**
 * One log line per claim outcome, pino-style: `info` when the claim is fine, `warn` when
 * it failed or waits for a deletion. Fields are the outcome's, which never hold a password
 * (the same text the CLI prints).
 */
export function logOutcome(logger: HotloadLogger, outcome: ClaimOutcome): void {
  const { claim, result, actions, matchedLabel, activeUser, error } = outcome;
  const fields = { claim, result, actions, matchedLabel, activeUser };
  if (error !== undefined || result === 'error' || result === 'deletion-pending') {
    logger.warn({ ...fields, error }, `claim ${claim}: ${result}`);
  } else {
    logger.info(fields, `claim ${claim}: ${result}`);
  }
}
