/**
 * Password rotation between the two login users. A fresh password is only ever set on a
 * user the published secret does not name, then verified with a real login, and only then
 * published: the user in the secret keeps working throughout, and the previous user keeps
 * its password until the next rotation, so pools opened with it can drain.
 */
import type { ClaimStatus } from './claim-status.js';
import { generatePassword } from './password-generator.js';
import type { ConnectionParts } from './pg-connection.js';
import { tryLogin } from './pg-connection.js';
import type { Provisioner } from './provisioner.js';
import type { PasswordSettings } from './reconciler-config.js';

/** Fresh credentials failed their login check; nothing was published. */
export class VerificationError extends Error {
  /** Always `VerificationError`. */
  override readonly name = 'VerificationError';
}

/** The login user that is not `active` (`_a` ↔ `_b`); `_a` when no known user is active. */
export function inactiveUser(users: readonly [string, string], active: string | undefined): string {
  return active === users[0] ? users[1] : users[0];
}

/**
 * Sets a fresh password on `user`, verifies a login with it and returns it. The caller
 * publishes it; until then nothing points at `user`.
 */
export async function setVerifiedPassword(
  provisioner: Provisioner,
  user: string,
  settings: PasswordSettings,
  login: Omit<ConnectionParts, 'user' | 'password'>,
): Promise<string> {
  const password = generatePassword(settings);
  // A dry run set nothing, so there is nothing to verify (and nothing will be published).
  if (!(await provisioner.setPassword(user, password))) return password;
  const result = await tryLogin({ ...login, user, password });
  if (!result.ok)
    throw new VerificationError(`login as ${user} with the new password failed: ${result.reason}`);
  return password;
}

/** Why the active password has to change now, or undefined when it does not. */
export function rotationReason(options: {
  now: Date;
  passwordSetAt: Date | undefined;
  settings: PasswordSettings;
  forced: boolean;
}): string | undefined {
  if (options.forced) return 'rotation requested';
  if (options.passwordSetAt === undefined) return 'password age unknown';
  const ageMinutes = (options.now.getTime() - options.passwordSetAt.getTime()) / 60_000;
  return ageMinutes >= options.settings.rotationPeriodMinutes
    ? `password older than ${options.settings.rotationPeriodMinutes} minutes`
    : undefined;
}

/**
 * When the active user's password was set: from the status when it agrees with the secret,
 * else from the secret's publish time (after a crash between publish and status write).
 */
export function passwordSetAt(
  status: ClaimStatus | undefined,
  activeUser: string,
  publishedAt: Date | undefined,
): Date | undefined {
  if (status?.activeUser === activeUser && status.userUpdatedAt) return new Date(status.userUpdatedAt);
  return publishedAt;
}
