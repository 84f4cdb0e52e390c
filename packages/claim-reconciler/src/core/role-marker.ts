/**
 * The comment that marks a role as created by the reconciler: a leaf module, so the
 * migration engine (which creates replication roles) marks its roles the same way without
 * importing the provisioner.
 */

/**
 * The comment this reconciler writes on every role it creates, in the same transaction as
 * the `CREATE ROLE`. Only roles carrying it are adopted, changed or dropped: a claim naming
 * any other existing role is refused, so writing a claim cannot take over someone's role.
 */
export const MANAGED_ROLE_MARKER = 'managed by hotload-claim-reconciler';
