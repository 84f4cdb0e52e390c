/** Where a claim's database lives: shared by the status file and the migration state. */

import type { SeedSource } from './seed-source.js';

/** What happens to a claim's database and roles once it no longer uses them. */
export type DeletionPolicy = 'Delete' | 'Orphan';

/** Where a claim's database and users live (or lived). */
export interface Binding {
  /** Fragment key label used to log in as master. */
  readonly label: string;
  /** The instance's host (the claim's `host` override, else the fragment key's). */
  readonly host: string;
  /** The instance's port (the claim's `port` override, else the fragment key's). */
  readonly port: number;
  /** The claim's database on that instance. */
  readonly databaseName: string;
  /** Base role; login users are `<userName>_a` / `<userName>_b`. */
  readonly userName: string;
  /**
   * What happens to the database and roles once the binding is retired or the claim is gone
   * (`Delete` or `Orphan`).
   */
  readonly deletionPolicy: DeletionPolicy;
  /**
   * Set when the database is an existing one the claim manages users on in place
   * (`useExistingSource`): the DSN source whose login acts as master there (`label` is then
   * `existing`, not a fragment key). Such a database is never dropped: it is not the claim's.
   */
  readonly existingSource?: Exclude<SeedSource, { kind: 'claim' }>;
}
