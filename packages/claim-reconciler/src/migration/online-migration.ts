/**
 * Drives one migration through its phases (migration-state.ts) as far as it can in one
 * pass: every phase starts by looking at what exists, so a pass killed anywhere resumes
 * from the persisted phase and converges. A pass returns early, with the state saved,
 * when it would otherwise wait longer than `waitMillis` (initial copy, catch-up, final
 * position) or when a canary cutover waits for approval; the next pass continues.
 * Errors are thrown with the state saved; before `cutover` they leave the application on
 * the source, untouched.
 */

import { type ApplyErrorWatch, watchApplyErrors } from './apply-error-watch.js';
import { type CutoverStrategy, DEFAULT_CUTOVER_SETTINGS } from './cutover-settings.js';
import { ReplicationConflictError } from './migration-errors.js';
import type { MigrationState } from './migration-state.js';
import { ReplicationLink, type SourceAddress } from './replication-link.js';
import { checkReplicationPrerequisites } from './replication-preflight.js';
import type { ReplicationProgress } from './replication-progress.js';
import {
  confirmedPosition,
  countRows,
  finalWalPosition,
  readReplicationProgress,
} from './replication-progress.js';
import { copySchema, verifySchema } from './schema-copy.js';
import { readSequences, sequenceGap } from './sequence-gap.js';
import { advanceSequences } from './sequence-sync.js';
import { drainSource } from './source-drain.js';
import type { DatabaseSession, SqlClient } from './sql-client.js';
import { SynchronousApply, type SynchronousApplyUnavailable } from './synchronous-apply.js';
import { raiseWriteFence } from './write-fence.js';

/** Tunables of a migration; every field has a default. */
export interface MigrationOptions {
  /**
   * Fewest steps each target sequence is set past its source twin at cutover (more when
   * the source uses them fast: see sequence-gap.ts). Default 10000.
   */
  readonly sequenceGap?: number;
  /** How long the source's application sessions may take to leave before they are terminated. Default 30 s. */
  readonly drainGraceMillis?: number;
  /** Longest a pass waits for the initial copy, the catch-up or the final position. Default 120 s. */
  readonly waitMillis?: number;
  /** Cutover starts once the target is at most this many WAL bytes behind. Default 64 KiB. */
  readonly maxCutoverLagBytes?: number;
  /**
   * How long, from the start of streaming, the lag may stay above `maxCutoverLagBytes`
   * before `cutoverStrategy` makes it fall. Default 10 s.
   */
  readonly maxCatchUpMillis?: number;
  /** What brings a lag that stays high to the cutover (see cutover-settings.ts). Default `synchronous-apply`. */
  readonly cutoverStrategy?: CutoverStrategy;
  /** Longest write pause on the source a `fence` may take. Default 2 s. */
  readonly maxWritePauseMillis?: number;
  /** How long apply errors may persist without progress before they are reported as a conflict. Default 10 s. */
  readonly conflictGraceMillis?: number;
  /** Interval between progress readings. Default 100 ms. */
  readonly pollMillis?: number;
}

export type { DatabaseSession } from './sql-client.js';

/** The two ends of a migration. */
export interface MigrationEndpoints {
  readonly source: DatabaseSession;
  readonly target: DatabaseSession;
  /** How the target server reaches the source database. */
  readonly sourceAddress: SourceAddress;
  /** Where the two are, for messages (`host:port`). */
  readonly describe: { readonly source: string; readonly target: string };
  /** The claim's base role on the source (the replication login reads as it) and target (owns the copy). */
  readonly baseRole: string;
  /**
   * The role the replication login reads the source as, when it is not `baseRole` (a
   * seed: the source database belongs to another claim or to the DSN's login).
   */
  readonly sourceReaderRole?: string;
  /**
   * Create the replication slot before the subscription: a seed's source may be on the
   * target's own server, where a subscription cannot create its slot itself.
   */
  readonly slotFirst?: boolean;
  /** Login users whose sessions must leave the source. */
  readonly sourceUsers: readonly string[];
}

/** What the migration asks of the reconciler. */
export interface MigrationHooks {
  /** Announced before every state-changing step (crash injection, tests). */
  step(action: string): Promise<void>;
  /** Persists the state (the status file). */
  save(state: MigrationState): Promise<void>;
  /** Points the claim's secret at the target (fresh password on a target user, verified). */
  publishTarget(): Promise<void>;
  /** Publishes the canary secret pointing at the target; returns its name. */
  publishCanary(): Promise<string>;
  /** Removes the canary secret if present. */
  removeCanary(): Promise<void>;
  /** Whether a manual cutover has been approved by the claim. */
  readonly cutoverApproved: boolean;
}

const DEFAULTS = {
  sequenceGap: 10_000,
  drainGraceMillis: 30_000,
  waitMillis: 120_000,
  maxCutoverLagBytes: DEFAULT_CUTOVER_SETTINGS.maxCutoverLagBytes,
  maxCatchUpMillis: DEFAULT_CUTOVER_SETTINGS.maxCatchUpSeconds * 1000,
  cutoverStrategy: DEFAULT_CUTOVER_SETTINGS.cutoverStrategy,
  maxWritePauseMillis: DEFAULT_CUTOVER_SETTINGS.maxWritePauseMillis,
  conflictGraceMillis: 10_000,
  pollMillis: 100,
} satisfies Required<MigrationOptions>;

/** Advances `state` as far as possible; returns the saved state. */
export async function runMigration(
  state: MigrationState,
  endpoints: MigrationEndpoints,
  hooks: MigrationHooks,
  options: MigrationOptions = {},
): Promise<MigrationState> {
  const settings = { ...DEFAULTS, ...options };
  return endpoints.source(async (source) => {
    // The pass's own writes on the source never wait for the subscriber (see synchronous-apply.ts).
    await source.query('SET synchronous_commit = local');
    const apply = new SynchronousApply(state.replicationName, (action) => hooks.step(action));
    let result: MigrationState;
    try {
      result = await endpoints.target((target) =>
        new MigrationPass(source, target, endpoints, hooks, settings, apply).run(state),
      );
    } catch (error) {
      // Never left behind by a failed pass (an unreachable target included): it would hold every commit.
      await apply.release(source).catch(() => {});
      throw error;
    }
    await apply.release(source);
    return result;
  });
}

/**
 * Drops the link of a migration that will not complete (the claim went back to the source
 * or asked for another target before cutover), and the canary secret. The target database
 * itself is retired by the caller under its deletion policy. A target that cannot be
 * reached is skipped: its subscription goes with its database, and the slot is dropped on
 * the source regardless.
 */
export async function abandonMigration(
  state: MigrationState,
  endpoints: MigrationEndpoints,
  hooks: MigrationHooks,
): Promise<void> {
  const link = new ReplicationLink(state.replicationName, (action) => hooks.step(action));
  await endpoints.source(async (source) => {
    // Before the subscription goes: a synchronous standby that never answers holds every commit.
    await new SynchronousApply(state.replicationName, (action) => hooks.step(action)).release(source);
    const removed = await endpoints
      .target(async (target) => {
        await link.remove(source, target);
        return true;
      })
      .catch(() => false);
    if (!removed) await link.remove(source, undefined);
  });
  await hooks.removeCanary();
}

/** The state after one phase step, and whether the pass stops there to wait. */
interface Advanced {
  readonly state: MigrationState;
  readonly stop: boolean;
}

const go = (state: MigrationState): Advanced => ({ state, stop: false });
const pause = (state: MigrationState): Advanced => ({ state, stop: true });

class MigrationPass {
  constructor(
    private readonly source: SqlClient,
    private readonly target: SqlClient,
    private readonly endpoints: MigrationEndpoints,
    private readonly hooks: MigrationHooks,
    private readonly settings: Required<MigrationOptions>,
    private readonly apply: SynchronousApply,
  ) {}

  /** The hook's step, callable detached. */
  private readonly step = (action: string): Promise<void> => this.hooks.step(action);

  /** Runs while synchronous apply is held (see apply-error-watch.ts). */
  private watch: ApplyErrorWatch | undefined;

  async run(initial: MigrationState): Promise<MigrationState> {
    let state = initial;
    const link = new ReplicationLink(state.replicationName, this.step);
    try {
      while (state.phase !== 'done') {
        const next = await this.advance(state, link);
        state = next.state;
        await this.hooks.save(state);
        if (next.stop) break;
      }
      return state;
    } finally {
      await this.stopWatch();
    }
  }

  /** One phase step from `state` (never `done`). */
  private async advance(state: MigrationState, link: ReplicationLink): Promise<Advanced> {
    const { source, target, endpoints, hooks, settings } = this;
    switch (state.phase) {
      case 'schema': {
        await checkReplicationPrerequisites(source, target, endpoints.describe);
        const copy = await copySchema(source, target, endpoints.baseRole, this.step);
        const { tables, replicaIdentities } = copy;
        return go({ ...state, phase: 'copying', tables, replicaIdentities, error: null });
      }
      case 'copying': {
        await checkReplicationPrerequisites(source, target, endpoints.describe);
        await link.ensurePublication(source, state.tables);
        await link.ensureSubscription(
          source,
          target,
          endpoints.sourceAddress,
          endpoints.sourceReaderRole ?? endpoints.baseRole,
          state.tables,
          endpoints.slotFirst,
        );
        const reading = await this.waitFor(link, state, allTablesReady);
        const progressed = { ...state, ...progressFields(reading.progress) };
        if (!reading.reached) return pause(progressed);
        const rowsCopied = await countRows(target, state.tables);
        const streamingAt = new Date().toISOString();
        return go({ ...progressed, phase: 'streaming', rowsCopied, streamingAt });
      }
      case 'streaming': {
        if (!(await link.hasSubscription(target))) return go(recopy(state));
        // A state saved before the field existed starts its catch-up bound now.
        const streamingAt = state.streamingAt ?? new Date().toISOString();
        // A seed never fences or holds the source's writes: they are someone else's.
        const forcing = settings.cutoverStrategy !== 'wait' && !state.seedFrom;
        const forceAt = Date.parse(streamingAt) + settings.maxCatchUpMillis;
        // Every table ready again too: a target that restarted may be copying a table anew.
        const reading = await this.waitFor(
          link,
          state,
          (p) => allTablesReady(p) && p.lagBytes !== null && p.lagBytes <= settings.maxCutoverLagBytes,
          undefined,
          forcing ? forceAt : undefined,
        );
        const progressed = { ...state, streamingAt, ...progressFields(reading.progress) };
        const mayForce = forcing && Date.now() >= forceAt && allTablesReady(reading.progress);
        if (!reading.reached && !mayForce) return pause(progressed);
        if (state.manualCutover && !hooks.cutoverApproved) {
          const canarySecret = await hooks.publishCanary();
          return pause({ ...progressed, canarySecret });
        }
        if (reading.reached) return go({ ...progressed, phase: 'cutover', cutoverStrategy: 'lag-threshold' });
        return this.forceCatchUp(link, progressed);
      }
      case 'cutover': {
        if (state.seedFrom) return this.seedCutover(link, state);
        if (!(await link.hasSubscription(target))) {
          await this.apply.release(source); // a killed pass may have held it for the lost subscription
          return go(recopy(state));
        }
        const sequencesBefore = await readSequences(source);
        // DDL run on the source since the copy is not replicated: stop before the move.
        await verifySchema(source, target, this.endpoints.baseRole);
        // From here until the source's sessions are gone, both instances take writes.
        const held = await this.holdSynchronousApply(link, state);
        if ('stop' in held) return held;
        const gap = await sequenceGap(
          source,
          sequencesBefore,
          settings.sequenceGap,
          settings.drainGraceMillis,
        );
        await advanceSequences(source, target, gap, this.step);
        await hooks.publishTarget();
        return go({ ...held, phase: 'draining', cutoverAt: new Date().toISOString() });
      }
      case 'draining': {
        // Resuming a killed pass that held it: the sessions left on the source are ordered again.
        const resumedHolding = state.synchronousApply === 'held' && this.watch === undefined;
        if (resumedHolding && state.finalConfirmedAt === null && (await link.hasSubscription(target))) {
          const held = await this.holdSynchronousApply(link, state);
          if ('stop' in held) return held;
        }
        const drained = await drainSource(
          source,
          endpoints.sourceAddress.database,
          endpoints.sourceUsers,
          settings.drainGraceMillis,
          this.step,
        );
        // No application session is left on the source: nothing there to order any more.
        const releasedOnErrors = await this.stopWatch();
        await this.apply.release(source);
        let progressed: MigrationState = {
          ...state,
          sessionsTerminated: drained.terminated,
          ...(releasedOnErrors ? { synchronousApply: 'released-after-apply-errors' as const } : {}),
        };
        // Persisted before the link is dropped: a run killed while removing it goes on.
        if (state.finalConfirmedAt === null) {
          if (!(await link.hasSubscription(target))) {
            throw new Error(
              'the subscription on the target disappeared before it confirmed the final position; the source is kept',
            );
          }
          const finalLsn = await finalWalPosition(source);
          const final = { ...progressed, finalLsn };
          const reading = await this.waitFor(link, final, () => false, finalLsn);
          progressed = { ...final, ...progressFields(reading.progress) };
          if (!reading.reached) return pause(progressed);
          progressed = { ...progressed, finalConfirmedAt: new Date().toISOString() };
          await this.hooks.save(progressed);
        }
        await advanceSequences(source, target, 0, this.step);
        await link.remove(source, target);
        if (state.canarySecret) await hooks.removeCanary();
        return go({
          ...progressed,
          phase: 'done',
          canarySecret: null,
          lagBytes: 0,
          lagSeconds: 0,
          completedAt: new Date().toISOString(),
        });
      }
      case 'done':
        return pause(state);
    }
  }

  /**
   * The cutover of a seed: the target confirms the source's WAL position read now (so it
   * holds every transaction committed on the source before), the link goes, its sequences
   * are set to the source's, and only then is the claim's secret published. The source keeps
   * taking its own writes throughout; nothing there is fenced, drained or retired.
   */
  private async seedCutover(link: ReplicationLink, state: MigrationState): Promise<Advanced> {
    const { source, target, hooks } = this;
    let progressed = state;
    if (state.finalConfirmedAt === null) {
      if (!(await link.hasSubscription(target))) return go(recopy(state));
      await verifySchema(source, target, this.endpoints.baseRole);
      const finalLsn = state.finalLsn ?? (await finalWalPosition(source));
      const final = { ...state, finalLsn };
      const reading = await this.waitFor(link, final, () => false, finalLsn);
      progressed = { ...final, ...progressFields(reading.progress) };
      if (!reading.reached) return pause(progressed);
      progressed = { ...progressed, finalConfirmedAt: new Date().toISOString() };
      await hooks.save(progressed);
    }
    // The link goes first: until then the source's newer rows keep arriving, with ids past
    // any sequence position read before.
    await link.remove(source, target);
    await advanceSequences(source, target, 0, this.step);
    await hooks.publishTarget();
    const now = new Date().toISOString();
    return go({ ...progressed, phase: 'done', lagBytes: 0, lagSeconds: 0, cutoverAt: now, completedAt: now });
  }

  /**
   * Holds synchronous apply (see synchronous-apply.ts) once the target has caught up with
   * the source: a conflict is reported here, and no commit starts waiting for a subscriber
   * that is stuck or far behind. Returns the state saying how writes are ordered, or a
   * pause when the target did not catch up within `waitMillis`. With the
   * `synchronous-apply` strategy the catch-up waits at most `maxCatchUpMillis`: under writes
   * faster than the target applies, every moment spent waiting adds backlog that the
   * commits will wait for once the hold is on, so past that it holds at once.
   */
  private async holdSynchronousApply(
    link: ReplicationLink,
    state: MigrationState,
  ): Promise<MigrationState | Advanced> {
    const { cutoverStrategy, maxCatchUpMillis } = this.settings;
    const bounded = cutoverStrategy === 'synchronous-apply';
    const position = await finalWalPosition(this.source);
    const caughtUp = await this.waitFor(
      link,
      state,
      () => false,
      position,
      bounded ? Date.now() + maxCatchUpMillis : undefined,
    );
    const progressed = { ...state, ...progressFields(caughtUp.progress) };
    if (!caughtUp.reached && !bounded) return pause(progressed);
    const unavailable = await this.startSynchronousApply(link);
    return { ...progressed, synchronousApply: unavailable ?? 'held' };
  }

  /**
   * Names the subscription as the source's synchronous standby now, and watches for apply
   * errors while it is. Resolves once commits wait for the target, which has then applied
   * everything committed before (the backlog is drained); or why it is not available.
   */
  private async startSynchronousApply(
    link: ReplicationLink,
  ): Promise<SynchronousApplyUnavailable | undefined> {
    const unavailable = await this.apply.hold(this.source, Date.now() + this.settings.waitMillis);
    if (unavailable === undefined) {
      this.watch ??= watchApplyErrors({
        source: this.endpoints.source,
        target: this.endpoints.target,
        name: link.name,
        pollMillis: this.settings.pollMillis,
        onErrors: (source) => this.apply.release(source),
      });
    }
    return unavailable;
  }

  /**
   * The lag stayed above the threshold for `maxCatchUpMillis`: make it fall. With
   * `synchronous-apply` the source's commits wait for the target from now on (no catch-up
   * first: under writes faster than the target applies, a catch-up never ends), so once the
   * hold is effective the target has applied the backlog and cannot fall behind again; the
   * cutover keeps it held. Where the source does not allow that, or with `fence`, the
   * writes pause instead (see {@link MigrationPass.fencedCatchUp}).
   */
  private async forceCatchUp(link: ReplicationLink, state: MigrationState): Promise<Advanced> {
    if (this.settings.cutoverStrategy === 'synchronous-apply') {
      const unavailable = await this.startSynchronousApply(link);
      if (unavailable === undefined) {
        return go({ ...state, phase: 'cutover', cutoverStrategy: 'synchronous-apply' });
      }
    }
    return this.fencedCatchUp(link, state);
  }

  /**
   * Pauses writes on the source (write-fence.ts) while the target confirms the source's
   * position, for at most `maxWritePauseMillis`, then lets them go on. Caught up while fenced,
   * the migration cuts over; a target that needs longer leaves it in `streaming`, and the
   * next pass fences again. The backlog a fence must drain is what piled up in
   * `maxCatchUpMillis`: under writes faster than the target applies, a fence drains it only
   * if the pause allowed is long enough, which is why `synchronous-apply` is the default.
   */
  private async fencedCatchUp(link: ReplicationLink, state: MigrationState): Promise<Advanced> {
    const { maxWritePauseMillis } = this.settings;
    await this.step('fence-source-writes');
    let fence: Awaited<ReturnType<typeof raiseWriteFence>>;
    try {
      fence = await raiseWriteFence(this.endpoints.source, state.tables, maxWritePauseMillis);
    } catch (error) {
      // 55P03: a transaction held a table for longer than the pause may last; try again later.
      if ((error as { code?: string }).code === '55P03') return pause(state);
      throw error;
    }
    let pausedMillis: number;
    let reading: Awaited<ReturnType<MigrationPass['waitFor']>>;
    try {
      const position = await finalWalPosition(this.source);
      const deadline = Date.now() + maxWritePauseMillis - (performance.now() - fence.since);
      reading = await this.waitFor(link, state, () => false, position, deadline);
      // Caught up and nothing written since: synchronous apply takes effect at once now and
      // keeps it so when the writes go on (the cutover holds it anyway; where it is not
      // available the cutover says why).
      if (reading.reached) await this.startSynchronousApply(link);
    } finally {
      pausedMillis = await fence.lower();
    }
    const progressed: MigrationState = {
      ...state,
      ...progressFields(reading.progress),
      longestWritePauseMillis: Math.max(state.longestWritePauseMillis ?? 0, Math.round(pausedMillis)),
    };
    if (!reading.reached) return pause(progressed);
    return go({ ...progressed, phase: 'cutover', cutoverStrategy: 'fence' });
  }

  /** Ends the apply-error watch; says whether it released synchronous apply. */
  private async stopWatch(): Promise<boolean> {
    const watch = this.watch;
    this.watch = undefined;
    if (watch === undefined) return false;
    await watch.stop();
    return watch.tripped;
  }

  /**
   * Polls the link until `goal` holds (or, with `lsn`, until the target confirmed it), for
   * at most `waitMillis` (and not past `until`, a `Date.now()` time, when given). Apply errors that keep coming for `conflictGraceMillis` without
   * the goal being reached are a conflict: saved in the state and thrown, with the source
   * and the slot left in place.
   */
  private async waitFor(
    link: ReplicationLink,
    state: MigrationState,
    goal: (progress: ReplicationProgress) => boolean,
    lsn?: string,
    until?: number,
  ): Promise<{ reached: boolean; progress: ReplicationProgress }> {
    const { settings } = this;
    const deadline = Math.min(Date.now() + settings.waitMillis, until ?? Number.POSITIVE_INFINITY);
    // The counters are cumulative (an error fixed long ago still counts), so a conflict is
    // errors that keep coming: the apply worker retries a failing change every
    // wal_retrieve_retry_interval, and each retry adds one.
    let errorsSeen: number | undefined;
    let conflictSince: number | undefined;
    for (;;) {
      const progress = await readReplicationProgress(this.source, this.target, link.name);
      const reached = lsn
        ? allTablesReady(progress) && (await confirmedPosition(this.source, link.name, lsn))
        : goal(progress);
      if (reached) return { reached, progress };
      const errors = Object.values(progress.errors).reduce((sum, n) => sum + n, 0);
      if (errorsSeen !== undefined && errors > errorsSeen) conflictSince ??= Date.now();
      errorsSeen = errors;
      if (conflictSince !== undefined && Date.now() - conflictSince >= settings.conflictGraceMillis) {
        const conflict = `replication conflict on the target (${describeErrors(progress.errors)}); the source and its replication slot are kept until it is resolved (see the target server log)`;
        await this.hooks.save({ ...state, ...progressFields(progress), conflict, error: conflict });
        throw new ReplicationConflictError(conflict);
      }
      if (Date.now() >= deadline) return { reached: false, progress };
      await new Promise((resolve) => setTimeout(resolve, settings.pollMillis));
    }
  }
}

/**
 * Back to `copying` when the subscription is gone before cutover (a target that crashed
 * with its creation not yet on disk, or dropped by hand): the application is still on the
 * source, so the target's tables are emptied and copied again.
 */
function recopy(state: MigrationState): MigrationState {
  return { ...state, phase: 'copying', tablesReady: 0, rowsCopied: null };
}

/**
 * Every table's initial copy is done (state `r`). The slot's confirmed position covers
 * only the streamed changes: a table still being copied (again, after a target restart)
 * is not on the target yet whatever the position says.
 */
function allTablesReady(progress: ReplicationProgress): boolean {
  return progress.tablesReady === progress.tablesTotal;
}

/** The progress readings kept in the state; a reading clears an earlier conflict and error. */
function progressFields(progress: ReplicationProgress): Partial<MigrationState> {
  return {
    conflict: null,
    error: null,
    tablesReady: progress.tablesReady,
    lagBytes: progress.lagBytes,
    lagSeconds: progress.lagSeconds,
  };
}

function describeErrors(errors: Readonly<Record<string, number>>): string {
  return Object.entries(errors)
    .map(([key, count]) => `${key}=${count}`)
    .join(', ');
}
