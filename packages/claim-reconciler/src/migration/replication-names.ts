/**
 * The one name a migration's replication objects share: publication (source database),
 * replication slot (source instance), subscription (target database) and the dedicated
 * replication login (source instance). Derived from the claim and the target, so a run
 * that resumes after a crash finds exactly the objects an earlier run created and never a
 * second set.
 */
import { createHash } from 'node:crypto';

/** Prefix of every replication object a migration creates. */
export const REPLICATION_NAME_PREFIX = 'hotload_mig_';

/** The name for `claim` moving to `target` (`host:port/database`); a valid, unquoted identifier. */
export function replicationName(claim: string, target: string): string {
  const digest = createHash('sha256').update(`${claim}\n${target}`).digest('hex').slice(0, 16);
  return `${REPLICATION_NAME_PREFIX}${digest}`;
}
