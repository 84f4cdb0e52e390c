/**
 * The persisted state of one online migration (kept in the claim's status file, so a
 * restarted reconciler resumes where a killed one stopped). Phases, in order:
 *
 *   schema → copying → streaming → cutover → draining → done
 *
 * - `schema`: pre-flight checks, schema copy and catalog check. Nothing moved yet.
 * - `copying`: publication, replication login and subscription exist; initial table copy.
 * - `streaming`: every table copied; changes stream. A manual (canary) cutover waits here.
 * - `cutover`: schema re-checked, target sequences advanced, secret being republished.
 * - `draining`: the secret points at the target; waiting for the source sessions to leave
 *   and the target to confirm the source's final WAL position; then the link is dropped.
 * - `done`: the source went to `retired` under its deletion policy.
 *
 * Until `cutover` the application stays on the source; from `draining` on it is on the
 * target. Never holds a password.
 *
 * A seed (`seedFrom` set: a new claim's database filled from someone else's database)
 * runs the same phases up to `streaming`; its `cutover` confirms the source's position,
 * drops the link and only then publishes the claim's first secret; it never drains,
 * fences or retires the source, which is not the claim's.
 */
import type { Binding } from '../core/binding.js';
import type { SeedSource } from '../core/seed-source.js';
import type { CutoverReason } from './cutover-settings.js';
import type { ReplicaIdentityChoice } from './replica-identity.js';
import type { SynchronousApplyUnavailable } from './synchronous-apply.js';

/** A migration phase (see the file comment). */
export type MigrationPhase = 'schema' | 'copying' | 'streaming' | 'cutover' | 'draining' | 'done';

/** Phases in order. */
export const MIGRATION_PHASES: readonly MigrationPhase[] = [
  'schema',
  'copying',
  'streaming',
  'cutover',
  'draining',
  'done',
];

/** One migration, as persisted in the status file. */
export interface MigrationState {
  /** The phase the migration is in (see {@link MIGRATION_PHASES}). */
  readonly phase: MigrationPhase;
  /** Where the database was: the application stays there until the cutover. */
  readonly source: Binding;
  /** Where the database moves to. */
  readonly target: Binding;
  /** Name of the publication, slot, subscription and replication login. */
  readonly replicationName: string;
  /** ISO time the migration started. */
  readonly startedAt: string;
  /** The claim asked for a manual (canary) cutover when the migration started or since. */
  readonly manualCutover: boolean;
  /** Qualified names of the replicated tables (from the schema copy). */
  readonly tables: readonly string[];
  /**
   * The tables without a primary key and the replica identity the move chose for each (a
   * unique index where one fits, else FULL; set on the source, mirrored on the target: see
   * replica-identity.ts). Null before the schema copy (or in a state saved before the field existed).
   */
  readonly replicaIdentities: readonly ReplicaIdentityChoice[] | null;
  /** How many of {@link MigrationState.tables} are copied and now streamed (subscription state `r`). */
  readonly tablesReady: number;
  /** Rows on the target once the initial copy finished (exact count). */
  readonly rowsCopied: number | null;
  /** Bytes of source WAL the target has not confirmed at the last reading; null before known. */
  readonly lagBytes: number | null;
  /** Seconds since the target last confirmed a position, when it is behind (else 0); null before known. */
  readonly lagSeconds: number | null;
  /** Name of the canary secret while it is published. */
  readonly canarySecret: string | null;
  /** A replication conflict holding the migration (source and slot are kept meanwhile). */
  readonly conflict: string | null;
  /** When every table was copied and changes started to stream (the wait for the cutover began). */
  readonly streamingAt: string | null;
  /**
   * What started the cutover: `lag-threshold`, the lag fell below `maxCutoverLagBytes` on
   * its own; `synchronous-apply` or `fence`, it did not within `maxCatchUpMillis` and that
   * strategy made it fall (see cutover-settings.ts). Null before the cutover.
   */
  readonly cutoverStrategy: CutoverReason | null;
  /** Longest write pause a fence took on the source, in ms (null: no fence ran). */
  readonly longestWritePauseMillis: number | null;
  /** When the secret was republished to point at the target. */
  readonly cutoverAt: string | null;
  /** The source WAL position the target had to confirm before the link was dropped. */
  readonly finalLsn: string | null;
  /** When the target confirmed {@link MigrationState.finalLsn} (every table copied too): the link may go. */
  readonly finalConfirmedAt: string | null;
  /**
   * How writes were ordered while both instances took them (from the cutover until the
   * source's sessions left): `held`, each source commit waited until the target applied it
   * (see synchronous-apply.ts); `released-after-apply-errors`, held until the target
   * refused a change (a conflict; see apply-error-watch.ts); otherwise why not, and
   * replication was asynchronous then. Null before the cutover.
   */
  readonly synchronousApply: 'held' | 'released-after-apply-errors' | SynchronousApplyUnavailable | null;
  /** Source sessions terminated after the drain grace period. */
  readonly sessionsTerminated: number | null;
  /** ISO time the migration finished (`done`); null until then. */
  readonly completedAt: string | null;
  /** Why the migration is stopped (refusal or last error), null while it progresses. */
  readonly error: string | null;
  /**
   * Set for a seed: the database the claim's new database is filled from (the source,
   * which belongs to someone else and is left as it is). Absent or null for a move.
   */
  readonly seedFrom?: SeedSource | null;
}

/** A migration about to start. */
export function newMigration(options: {
  source: Binding;
  target: Binding;
  replicationName: string;
  manualCutover: boolean;
  now: Date;
  seedFrom?: SeedSource;
}): MigrationState {
  return {
    phase: 'schema',
    source: options.source,
    target: options.target,
    replicationName: options.replicationName,
    startedAt: options.now.toISOString(),
    manualCutover: options.manualCutover,
    tables: [],
    replicaIdentities: null,
    tablesReady: 0,
    rowsCopied: null,
    lagBytes: null,
    lagSeconds: null,
    canarySecret: null,
    conflict: null,
    streamingAt: null,
    cutoverStrategy: null,
    longestWritePauseMillis: null,
    cutoverAt: null,
    finalLsn: null,
    finalConfirmedAt: null,
    synchronousApply: null,
    sessionsTerminated: null,
    completedAt: null,
    error: null,
    seedFrom: options.seedFrom ?? null,
  };
}

/** True while the application may still be sent back to the source (nothing published). */
export function beforeCutover(state: MigrationState): boolean {
  return state.phase === 'schema' || state.phase === 'copying' || state.phase === 'streaming';
}

/** True while a migration is under way (not finished). */
export function inProgress(state: MigrationState | null | undefined): state is MigrationState {
  return state !== null && state !== undefined && state.phase !== 'done';
}

/**
 * A migration state as stored (a status file, a claim's status), as this version reads it:
 * a state written before the phase was called `phase` holds it as `migrating`.
 */
export function storedMigration(value: unknown): MigrationState | null {
  if (value === null || typeof value !== 'object') return null;
  const { migrating, ...state } = value as Partial<MigrationState> & { migrating?: MigrationPhase };
  return (
    state.phase === undefined && migrating !== undefined ? { ...state, phase: migrating } : state
  ) as MigrationState;
}
