/**
 * Why a migration stopped. A refusal is terminal for the current source/target pair: it
 * stays refused until the database or the instance changes (an unsupported object, a
 * server setting), so it is reported and not retried as if it were a passing fault. Any
 * other error (a target that is down, a lost connection) is retried on the next pass.
 * Either way the application stays on the source.
 */

/** The migration cannot move this database as it is; nothing was moved. */
export class MigrationRefusedError extends Error {
  /** Always `MigrationRefusedError`. */
  override readonly name = 'MigrationRefusedError';
}

/** The logical replication stream failed to apply a change on the target. */
export class ReplicationConflictError extends Error {
  /** Always `ReplicationConflictError`. */
  override readonly name = 'ReplicationConflictError';
}
