/**
 * The user-conflict rule, one for both modes: several claims want the same login users
 * (the same `userName` on the same instance). The users stay with the claim whose status
 * already records them (its application is using them: taking them away would break it);
 * when none does, the claim first by `namespace/name` takes them, so the outcome does not
 * depend on which claim a pass or a worker happened to reach first. Every other claim gets
 * a terminal error naming the owner, and goes on once that claim lets go of the users.
 */
import type { Binding } from './claim-status.js';
import { instanceId } from './instance-target.js';

/** One claim wanting login users. */
export interface UsersWanted {
  /** The claim's `namespace/name`. */
  readonly claim: string;
  /** Where it wants them (instance and `userName`). */
  readonly binding: Binding;
  /** Whether the claim's status already records these users as its own. */
  readonly recorded: boolean;
}

/** Whether two bindings name the same login users: same `userName` on the same instance. */
export function sameUsers(a: Binding, b: Binding): boolean {
  return instanceId(a) === instanceId(b) && a.userName === b.userName;
}

/** The claim that keeps the users all of `contenders` want (see the module comment). */
export function usersOwner(contenders: readonly UsersWanted[]): string | undefined {
  const byKey = (a: UsersWanted, b: UsersWanted) => a.claim.localeCompare(b.claim);
  const recorded = contenders.filter((c) => c.recorded).sort(byKey);
  return (recorded[0] ?? [...contenders].sort(byKey)[0])?.claim;
}

/**
 * For every claim of `wanted` that does not get its users, the error message; claims that
 * get them (or want users nobody else wants) are not in the map.
 */
export function userConflicts(wanted: readonly UsersWanted[]): Map<string, string> {
  const groups = new Map<string, UsersWanted[]>();
  for (const want of wanted) {
    const key = `${instanceId(want.binding)}/${want.binding.userName}`;
    groups.set(key, [...(groups.get(key) ?? []), want]);
  }
  const conflicts = new Map<string, string>();
  for (const group of groups.values()) {
    const owner = usersOwner(group);
    for (const { claim, binding } of group) {
      if (claim !== owner && owner !== undefined) conflicts.set(claim, userConflictMessage(binding, owner));
    }
  }
  return conflicts;
}

/** The error of a claim whose users another claim keeps. */
export function userConflictMessage(binding: Binding, owner: string): string {
  return `userName "${binding.userName}" on ${instanceId(binding)} is already managed by claim ${owner}`;
}
