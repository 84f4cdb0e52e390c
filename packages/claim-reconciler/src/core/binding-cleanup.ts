/**
 * The deletion policy of bindings a claim no longer uses (an instance change, or the claim
 * is gone). `Delete` drops a database (and then the roles) only when no other binding uses
 * it and this reconciler created it; a drop that fails (sessions still connected) stays
 * pending for the next pass.
 */

import { masterForBinding } from './binding-master.js';
import type { ClaimContext } from './claim-context.js';
import type { Binding } from './claim-status.js';
import { errorMessage } from './error-message.js';
import { instanceId } from './instance-target.js';
import { claimNames, Provisioner } from './provisioner.js';

/** Bindings still waiting (their clean-up failed) and why. */
export interface CleanUpResult {
  readonly bindings: Binding[];
  readonly errors: string[];
}

/** Applies the deletion policy to `bindings`, recording each action in `actions`. */
export async function cleanUpBindings(
  context: ClaimContext,
  claimKey: string,
  bindings: readonly Binding[],
  actions: string[],
): Promise<CleanUpResult> {
  const pending: Binding[] = [];
  const errors: string[] = [];
  for (const binding of bindings) {
    const where = `${instanceId(binding)}/${binding.databaseName}`;
    context.usage.remove(binding);
    if (binding.deletionPolicy === 'Orphan') {
      actions.push(
        binding.existingSource
          ? `left ${where} and the claim's users in place (Orphan); ${NOT_OURS_IN_PLACE}`
          : `left ${where} in place (Orphan)`,
      );
      continue;
    }
    try {
      if (context.keepDataBecause !== undefined) await disableBinding(context, claimKey, binding, actions);
      else await dropBinding(context, claimKey, binding, actions);
    } catch (error) {
      context.usage.add(binding);
      pending.push(binding);
      errors.push(`clean-up of ${where} pending: ${errorMessage(error)}`);
    }
  }
  return { bindings: pending, errors };
}

/** The deletion guard's `Delete`: data and roles stay, the login users can no longer log in. */
async function disableBinding(
  context: ClaimContext,
  claimKey: string,
  binding: Binding,
  actions: string[],
): Promise<void> {
  const where = `${instanceId(binding)}/${binding.databaseName}`;
  const provisioner = await provisionerFor(context, claimKey, binding);
  const disabled = binding.existingSource
    ? await disableLoginsInPlace(provisioner, binding, actions)
    : await provisioner.disableLogins();
  actions.push(
    `${DATA_KEPT} ${where} and its roles (policy Delete, but ${context.keepDataBecause})` +
      (disabled.length > 0 ? `; disabled login of ${disabled.join(', ')}` : ''),
  );
}

/** How the action of a binding kept by the deletion guard starts. */
export const DATA_KEPT = 'kept database';

async function provisionerFor(
  context: ClaimContext,
  claimKey: string,
  binding: Binding,
): Promise<Provisioner> {
  const master = await masterForBinding(context, binding);
  return Provisioner.create(
    master,
    claimNames(binding.userName, binding.databaseName),
    claimKey,
    context.onStep,
  );
}

async function dropBinding(
  context: ClaimContext,
  claimKey: string,
  binding: Binding,
  actions: string[],
): Promise<void> {
  const { usage } = context;
  const where = `${instanceId(binding)}/${binding.databaseName}`;
  const provisioner = await provisionerFor(context, claimKey, binding);
  if (binding.existingSource) return dropUsersInPlace(context, provisioner, binding, actions);
  let databaseLeft = usage.databaseInUse(binding);
  if (databaseLeft) {
    actions.push(`kept ${where}: another claim uses it`);
  } else if ((await provisioner.dropDatabase()) === 'not-ours') {
    // Pre-existing (or someone else's) database this claim was only granted access to.
    databaseLeft = true;
    actions.push(`left database ${where} in place: not created by this reconciler`);
  } else {
    actions.push(`dropped database ${where}`);
  }
  if (databaseLeft && !usage.databaseInUse(binding) && !usage.rolesInUse(binding)) {
    // The roles hold privileges (and maybe objects) in the database that stays.
    actions.push(
      `left roles ${binding.userName}, ${binding.userName}_a, ${binding.userName}_b on ${instanceId(binding)} in place: they hold privileges in ${binding.databaseName}`,
    );
  }
  if (!databaseLeft && !usage.rolesInUse(binding)) {
    const { dropped, kept } = await provisioner.dropRoles();
    if (dropped.length > 0) actions.push(`dropped roles ${dropped.join(', ')} on ${instanceId(binding)}`);
    if (kept.length > 0) {
      actions.push(
        `left roles ${kept.join(', ')} on ${instanceId(binding)} in place: not created by this reconciler`,
      );
    }
  }
}

/** SQLSTATE of "permission denied". */
const INSUFFICIENT_PRIVILEGE = '42501';

/** Why an existing database used in place stays whatever the policy (status and log). */
const NOT_OURS_IN_PLACE =
  "the database is not this claim's (useExistingSource: it only managed users there) and is never dropped";

/**
 * `Delete` of an existing database used in place: the database stays; the claim's login
 * users lose their sessions (where the DSN's login may end them) and are dropped; the base role stays, as it holds the grants
 * (and owns whatever the application created) in a database that is not the claim's.
 */
async function dropUsersInPlace(
  context: ClaimContext,
  provisioner: Provisioner,
  binding: Binding,
  actions: string[],
): Promise<void> {
  const instance = instanceId(binding);
  actions.push(`left database ${instance}/${binding.databaseName} in place: ${NOT_OURS_IN_PLACE}`);
  if (context.usage.rolesInUse(binding)) return;
  await disableLoginsInPlace(provisioner, binding, actions);
  const { dropped, kept } = await provisioner.dropRoles('login-users');
  if (dropped.length > 0) actions.push(`dropped roles ${dropped.join(', ')} on ${instance}`);
  if (kept.length > 0)
    actions.push(`left roles ${kept.join(', ')} on ${instance} in place: not created by this reconciler`);
  actions.push(
    `left role ${binding.userName} on ${instance} in place: it holds the claim's grants (and what the application created) in ${binding.databaseName}`,
  );
}

/**
 * {@link Provisioner.disableLogins} through an existing database's DSN login, which may be
 * no superuser: NOLOGIN is set, and a refusal to end the open sessions is reported, not fatal.
 */
async function disableLoginsInPlace(
  provisioner: Provisioner,
  binding: Binding,
  actions: string[],
): Promise<string[]> {
  const users = [`${binding.userName}_a`, `${binding.userName}_b`];
  return provisioner.disableLogins().catch((error: unknown) => {
    if ((error as { code?: unknown }).code !== INSUFFICIENT_PRIVILEGE) throw error;
    actions.push(
      `could not end the sessions of ${users.join(', ')} on ${instanceId(binding)}: the DSN's login may not (grant it pg_signal_backend); they end when they disconnect`,
    );
    return users;
  });
}
