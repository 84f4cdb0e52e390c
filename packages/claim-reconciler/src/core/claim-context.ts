import type { MigrationOptions } from '../migration/online-migration.js';
import type { ClaimPorts } from './claim-ports.js';
import type { MasterConnections } from './master-connection.js';
import type { ReconcilerMetrics } from './metrics.js';
import type { ReconcilerConfig } from './reconciler-config.js';
import type { StepHook } from './steps.js';
import type { UsageIndex } from './usage-index.js';

/** What reconciling (or deleting) one claim needs from its driver, shared across a pass. */
export interface ClaimContext {
  /** The reconciler config in force (fragment keys, password settings). */
  readonly config: ReconcilerConfig;
  /** Master connections, one pool per instance and login, opened on demand. */
  readonly connections: MasterConnections;
  /** Which databases and role sets bindings still use (a `Delete` drops nothing in use). */
  readonly usage: UsageIndex;
  /** Where secrets are published and statuses kept. */
  readonly ports: ClaimPorts;
  /** Announced before every state-changing step (crash tests, dry runs). */
  readonly onStep?: StepHook;
  /** Where to count provisioning, rotations and errors; none when absent. */
  readonly metrics?: ReconcilerMetrics;
  /** Tunables of online migrations (instance changes). */
  readonly migration?: MigrationOptions;
  /** The time of this reconcile (password ages and status times are measured against it). */
  readonly now: Date;
  /** This driver's publisher id ({@link ClaimPorts.publisherId}), recorded on each claim. */
  readonly publisher?: string;
  /** Record `publisher` even where another one is recorded (that output is gone for good). */
  readonly takeOver?: boolean;
  /**
   * Set while a deleted claim is cleaned up without leave to drop data (the controller's
   * deletion guard): a `Delete` policy then keeps the database and roles and only disables
   * the login users. The text says why, for the action and the Event.
   */
  readonly keepDataBecause?: string;
}
