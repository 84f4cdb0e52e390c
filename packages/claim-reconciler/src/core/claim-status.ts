/**
 * The status of a claim: where its database lives (so that instance changes and deletions
 * can be handled after the claim itself has changed or disappeared), its last error and its
 * timestamps. Kept by a {@link StatusStore} (status files in folder mode, the claim's status
 * subresource in a controller). It never holds a password.
 */

import type { MigrationState } from '../migration/migration-state.js';
import type { Binding } from './binding.js';
import type { DatabaseClaim } from './claim-schema.js';

export type { Binding } from './binding.js';

/** The persisted status of one claim. */
export interface ClaimStatus {
  /** `namespace/name` of the claim. */
  readonly claim: string;
  /** The claim's namespace (also its secret's). */
  readonly namespace: string;
  /** The name of the claim's secret (folder or Kubernetes Secret). */
  readonly secretName: string;
  /** Last error for this claim, or null when the last pass succeeded. */
  readonly error: string | null;
  /** Fragment key the claim's `instanceLabel` matched, or null when none did. */
  readonly matchedLabel: string | null;
  /** Where the published secret points; null before the first publish. */
  readonly binding: Binding | null;
  /** Login user currently published (`<userName>_a` or `_b`). */
  readonly activeUser: string | null;
  /** ISO time the reconciler created the database (null if it already existed). */
  readonly dbCreatedAt: string | null;
  /** ISO time the secret last changed (host, database, user or password). */
  readonly connectionInfoUpdatedAt: string | null;
  /** ISO time the active user's password was set. */
  readonly userUpdatedAt: string | null;
  /** Earlier bindings (instance changes) still waiting for their deletion policy. */
  readonly retired: readonly Binding[];
  /** True once the claim is gone and its clean-up is under way. */
  readonly deleting: boolean;
  /**
   * The online migration of an instance change, while it runs and after it finished (until
   * the next one); null when the claim never moved. `migration.phase` is its phase.
   */
  readonly migration?: MigrationState | null;
}

/**
 * The status of a claim that has none yet: nothing provisioned, published or retired (a
 * seed starts before the first publish; a first pass may fail before it).
 */
export function emptyStatus(claim: Pick<DatabaseClaim, 'key' | 'namespace' | 'secretName'>): ClaimStatus {
  return {
    claim: claim.key,
    namespace: claim.namespace,
    secretName: claim.secretName,
    error: null,
    matchedLabel: null,
    binding: null,
    activeUser: null,
    dbCreatedAt: null,
    connectionInfoUpdatedAt: null,
    userUpdatedAt: null,
    retired: [],
    deleting: false,
  };
}
