import type { Binding } from './claim-status.js';
import { instanceId } from './instance-target.js';

/**
 * Counts how many bindings use a database or a role set on an instance, so a `Delete`
 * drops nothing another claim (or a retired binding) still uses.
 */
export class UsageIndex {
  readonly #counts = new Map<string, number>();

  /** Counts `binding` as one more user of its database and of its role set. */
  add(binding: Binding): void {
    for (const key of UsageIndex.keys(binding)) this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** Counts `binding` as one user less (e.g. the binding being cleaned up). */
  remove(binding: Binding): void {
    for (const key of UsageIndex.keys(binding)) this.#counts.set(key, (this.#counts.get(key) ?? 1) - 1);
  }

  /** Whether a counted binding uses `binding`'s database on its instance. */
  databaseInUse(binding: Binding): boolean {
    return (this.#counts.get(UsageIndex.keys(binding)[0]) ?? 0) > 0;
  }

  /**
   * Whether a counted binding uses `binding`'s role set (`userName` and its `_a`/`_b` users)
   * on its instance.
   */
  rolesInUse(binding: Binding): boolean {
    return (this.#counts.get(UsageIndex.keys(binding)[1]) ?? 0) > 0;
  }

  /** `[database key, role-set key]` of a binding. */
  static keys(binding: Binding): [string, string] {
    const instance = instanceId(binding);
    return [`db:${instance}/${binding.databaseName}`, `role:${instance}/${binding.userName}`];
  }
}
