/** Where a claim's database lives: shared by the status file and the migration state. */
import type { DeletionPolicy } from './claim-schema.js';

/** Where a claim's database and users live (or lived). */
export interface Binding {
  /** Fragment key label used to log in as master. */
  readonly label: string;
  readonly host: string;
  readonly port: number;
  readonly databaseName: string;
  /** Base role; login users are `<userName>_a` / `<userName>_b`. */
  readonly userName: string;
  readonly deletionPolicy: DeletionPolicy;
}
