/**
 * The instance-change path of a claim's reconcile: when the claim now wants another
 * instance (or database location) than the one its secret points at, the data moves with
 * it by an online migration (migration/online-migration.ts) instead of the application
 * being handed an empty database. This file is the glue between the migration state
 * machine and the claim: it decides when a migration starts, continues or is abandoned,
 * opens the two ends, publishes the target (and canary) secret at the right moment, keeps
 * the status file in step, and retires the source once the migration is done.
 *
 * Abandon: pointing the claim back at its source (or at a third place) before cutover
 * drops the replication, removes the canary secret and retires the target database under
 * its deletion policy; the application never left the source.
 *
 * Seed: a new claim with `sourceDataFrom` runs the same machine from another database
 * (seed-endpoints.ts) into its own; its first secret is published at the seed's cutover,
 * and the source is never drained, fenced or retired (it is not the claim's).
 */

import { cutoverOptions } from '../migration/cutover-settings.js';
import { MigrationRefusedError } from '../migration/migration-errors.js';
import {
  beforeCutover,
  inProgress,
  type MigrationState,
  newMigration,
} from '../migration/migration-state.js';
import {
  abandonMigration,
  type DatabaseSession,
  type MigrationEndpoints,
  type MigrationHooks,
  type MigrationOptions,
  runMigration,
} from '../migration/online-migration.js';
import { describeReplicaIdentities } from '../migration/replica-identity.js';
import { replicationName } from '../migration/replication-names.js';
import type { Binding } from './binding.js';
import { cleanUpBindings } from './binding-cleanup.js';
import { masterForBinding } from './binding-master.js';
import type { ClaimContext } from './claim-context.js';
import type { ClaimReconcile } from './claim-outcome.js';
import type { SecretSink } from './claim-ports.js';
import type { DatabaseClaim } from './claim-schema.js';
import { type ClaimStatus, emptyStatus } from './claim-status.js';
import { errorMessage } from './error-message.js';
import { instanceId } from './instance-target.js';
import type { MasterConnection } from './master-connection.js';
import { claimNames, Provisioner } from './provisioner.js';
import { type ReconcileError, retryable, terminal } from './reconcile-result.js';
import { inactiveUser, setVerifiedPassword } from './rotation.js';
import type { PublishedCredentials } from './secret-layout.js';
import { openSeedSource, type SeedSourceEnd } from './seed-endpoints.js';
import { describeSeedSource } from './seed-source.js';
import { performStep } from './steps.js';

/** Suffix of the canary secret published during a manual cutover. */
export const CANARY_SECRET_SUFFIX = '-canary';

/**
 * Thrown by the migration's step hook in a dry run (the hook said `skip`): a migration
 * cannot pretend a step happened and go on (the next phase reads what the step made), so
 * the pass stops there and reports the step the move would take next.
 */
class DryRunStop extends Error {
  constructor(readonly action: string) {
    super(`dry run: the migration would ${action} next`);
  }
}

/** Requeue delay while a migration waits (copy, catch-up, drain, approval). */
const MIGRATION_REQUEUE_MILLIS = 1_000;

/** What the claim's reconcile already knows when it asks about a migration. */
export interface MigrationInput {
  readonly claim: DatabaseClaim;
  /** Where the claim wants its database now. */
  readonly binding: Binding;
  readonly sink: SecretSink;
  readonly status: ClaimStatus | undefined;
  readonly published: PublishedCredentials | undefined;
  readonly actions: string[];
  /** Reports the claim's error (status + outcome), as the reconcile does for any error. */
  readonly fail: (error: ReconcileError) => Promise<ClaimReconcile>;
}

/**
 * Runs (starts, continues or abandons) the claim's migration. Resolves undefined when the
 * claim is not moving, so the ordinary credential path goes on.
 */
export async function reconcileMigration(
  context: ClaimContext,
  input: MigrationInput,
): Promise<ClaimReconcile | undefined> {
  const { status } = input;
  let state = status?.migration;
  if (inProgress(state) && !sameDatabase(state.target, input.binding) && beforeCutover(state)) {
    return abandon(context, input, state, status!);
  }
  // A claim using its source in place (useExistingSource) copies nothing.
  if (
    !inProgress(state) &&
    input.claim.sourceDataFrom &&
    !input.claim.useExistingSource &&
    !status?.binding &&
    !input.published
  ) {
    return startSeed(context, input);
  }
  if (!inProgress(state)) {
    const source = status?.binding;
    if (!source || !input.published || sameDatabase(source, input.binding)) return undefined;
    if (!pointsAtBinding(input.published, source)) return undefined; // the secret is elsewhere: nothing to move from
    if (instanceId(source) === instanceId(input.binding))
      return input.fail(terminal(sameInstanceMove(source, input.binding)));
    state = newMigration({
      source,
      target: input.binding,
      replicationName: replicationName(
        input.claim.key,
        `${instanceId(input.binding)}/${input.binding.databaseName}`,
      ),
      manualCutover: input.claim.cutover === 'Manual',
      now: context.now,
    });
    input.actions.push(`migrating ${describe(source)} → ${describe(input.binding)}`);
    // Its own step: a dry run stops here, before the target (not provisioned in a dry run) is read.
    if (!(await performStep(context.onStep, { claim: input.claim.key, action: 'begin-migration' }))) {
      return new ClaimMigration(context, input, status!, state).dryRunOutcome(
        new DryRunStop('begin-migration'),
      );
    }
    context.metrics?.migrationStarted?.();
  } else if (state.manualCutover !== (input.claim.cutover === 'Manual') && beforeCutover(state)) {
    state = { ...state, manualCutover: input.claim.cutover === 'Manual' };
  }
  return new ClaimMigration(context, input, status!, state).run();
}

/**
 * Starts seeding a new claim's database from `claim.sourceDataFrom`: the source is
 * resolved and reached first, so a bad reference is reported (and nothing published)
 * before anything is created for the seed.
 */
async function startSeed(context: ClaimContext, input: MigrationInput): Promise<ClaimReconcile> {
  const seed = input.claim.sourceDataFrom!;
  const status = input.status ?? emptyStatus(input.claim);
  let source: SeedSourceEnd;
  try {
    source = await openSeedSource(context, seed);
  } catch (error) {
    return input.fail(retryable(errorMessage(error)));
  }
  const state = newMigration({
    source: source.binding,
    target: input.binding,
    replicationName: replicationName(
      input.claim.key,
      `seed/${instanceId(input.binding)}/${input.binding.databaseName}`,
    ),
    manualCutover: false,
    now: context.now,
    seedFrom: seed,
  });
  input.actions.push(`seeding ${describe(input.binding)} from ${describeSeedSource(seed)}`);
  if (!(await performStep(context.onStep, { claim: input.claim.key, action: 'begin-seed' }))) {
    return new ClaimMigration(context, input, status, state).dryRunOutcome(new DryRunStop('begin-seed'));
  }
  context.metrics?.migrationStarted?.();
  return new ClaimMigration(context, input, status, state).run();
}

/** One claim's migration during one pass. */
class ClaimMigration {
  #status: ClaimStatus;
  #state: MigrationState;

  constructor(
    private readonly context: ClaimContext,
    private readonly input: MigrationInput,
    status: ClaimStatus,
    state: MigrationState,
  ) {
    this.#status = status;
    this.#state = state;
  }

  async run(): Promise<ClaimReconcile> {
    const { context, input } = this;
    try {
      const endpoints = await migrationEndpoints(context, this.#state);
      const final = await runMigration(this.#state, endpoints, this.hooks(), this.options());
      if (final.phase !== 'done') {
        return this.outcome(
          'migrating',
          `${final.phase}${final.canarySecret ? ' (waiting for cutoverApproved)' : ''}`,
        );
      }
      context.metrics?.migrationCompleted?.();
      // The source was recorded in `retired` with the `done` state (see save): a run killed
      // during its clean-up leaves it there for the next pass.
      const remaining = await cleanUpBindings(context, input.claim.key, this.#status.retired, input.actions);
      const error = remaining.errors.length > 0 ? remaining.errors.join('; ') : null;
      await this.write({ ...this.#status, retired: remaining.bindings, error });
      return this.outcome(this.#state.seedFrom ? 'created' : 'moved', 'done', error ?? undefined);
    } catch (error) {
      if (error instanceof DryRunStop) return this.dryRunOutcome(error);
      context.metrics?.migrationFailed?.();
      const what = this.#state.seedFrom
        ? `seed of ${describe(this.#state.target)} from ${describeSeedSource(this.#state.seedFrom)}`
        : `migration to ${describe(this.#state.target)}`;
      const message = `${what} (${this.#state.phase}): ${errorMessage(error)}`;
      await this.save({ ...this.#state, error: message }).catch(() => {});
      return input.fail(error instanceof MigrationRefusedError ? terminal(message) : retryable(message));
    }
  }

  /**
   * The migration's settings: the reconciler config's `migration:`, then the options the
   * reconciler was started with (the CLI's flags), then the claim's `spec.migration`.
   */
  private options(): MigrationOptions {
    const { context, input } = this;
    return {
      ...cutoverOptions(context.config.migration),
      ...context.migration,
      ...cutoverOptions(input.claim.migration),
    };
  }

  /** The migration's hooks for this claim (also used to abandon). */
  hooks(): MigrationHooks {
    const { context, input } = this;
    const canary = context.ports.secretFor(
      input.claim.namespace,
      `${input.claim.secretName}${CANARY_SECRET_SUFFIX}`,
    );
    return {
      step: async (action) => {
        if (!(await performStep(context.onStep, { claim: input.claim.key, action })))
          throw new DryRunStop(action);
      },
      save: (state) => this.save(state),
      publishTarget: () => this.publishTarget(),
      publishCanary: async () => {
        if (!(await canary.read())) {
          // The user the main secret names: cutover sets its password on the *other* one.
          await this.publishOnTarget(canary, this.input.published!.username, 'publish-canary-secret');
          input.actions.push(`published ${canary.location} pointing at ${describe(this.#state.target)}`);
        }
        return `${input.claim.secretName}${CANARY_SECRET_SUFFIX}`;
      },
      removeCanary: async () => {
        if (!(await canary.read())) return;
        if (await performStep(context.onStep, { claim: input.claim.key, action: 'remove-canary-secret' }))
          await canary.remove();
      },
      cutoverApproved: input.claim.cutoverApproved === true,
    };
  }

  /** Cutover: a fresh password on the target user the secret does not name, verified, published. */
  private async publishTarget(): Promise<void> {
    const { context, input } = this;
    const target = this.#state.target;
    const names = claimNames(target.userName, target.databaseName);
    const user = inactiveUser(names.users, input.published?.username);
    await this.publishOnTarget(input.sink, user, 'publish-secret');
    const now = context.now.toISOString();
    this.#status = {
      ...this.#status,
      binding: target,
      matchedLabel: target.label,
      activeUser: user,
      userUpdatedAt: now,
      connectionInfoUpdatedAt: now,
      dbCreatedAt: now,
    };
    input.actions.push(`cut over: published ${user} on ${describe(target)}`);
  }

  private async publishOnTarget(sink: SecretSink, user: string, action: string): Promise<void> {
    const { context, input } = this;
    const target = this.#state.target;
    const master = await masterFor(context, target);
    const provisioner = Provisioner.create(
      master,
      claimNames(target.userName, target.databaseName),
      input.claim.key,
      context.onStep,
    );
    const login = {
      host: target.host,
      port: target.port,
      database: target.databaseName,
      sslmode: master.target.fragment.sslmode,
      sslrootcert: master.target.fragment.sslrootcert,
    };
    const password = await setVerifiedPassword(provisioner, user, context.config.password, login);
    const announce = async (step: string) => {
      await context.onStep?.({ claim: input.claim.key, action: step });
    };
    if (!(await performStep(context.onStep, { claim: input.claim.key, action })))
      throw new DryRunStop(action);
    await sink.publish({ ...login, username: user, password }, input.claim.dsnName, announce);
  }

  private async save(state: MigrationState): Promise<void> {
    if (state.cutoverAt && !this.#state.cutoverAt) this.reportCutover(state);
    if (state.replicaIdentities?.length && !this.#state.replicaIdentities) {
      this.input.actions.push(
        `replica identity for tables without a primary key: ${describeReplicaIdentities(state.replicaIdentities)}`,
      );
    }
    this.#state = state;
    this.context.metrics?.migrationLag?.(this.input.claim.key, state.lagBytes, state.lagSeconds);
    let { retired } = this.#status;
    // A seed's source is someone else's database: never retired.
    if (state.phase === 'done' && !state.seedFrom && !retired.some((b) => sameDatabase(b, state.source))) {
      // Recorded in the same write as `done`, so no crash loses track of the source.
      retired = [...retired, state.source];
      this.context.usage.add(state.source);
    }
    await this.write({ ...this.#status, retired, error: state.error ?? state.conflict });
  }

  private reportCutover(state: MigrationState): void {
    const started = Date.parse(state.streamingAt ?? state.startedAt);
    this.context.metrics?.migrationCutover?.(
      this.input.claim.key,
      state.cutoverStrategy ?? 'lag-threshold',
      Math.max(0, (Date.parse(state.cutoverAt!) - started) / 1000),
      (state.longestWritePauseMillis ?? 0) / 1000,
    );
  }

  private async write(status: ClaimStatus): Promise<void> {
    this.#status = { ...status, migration: this.#state };
    await this.context.ports.statuses.write(this.#status, this.context.onStep);
  }

  /** The outcome of a dry run stopped at `stop`. */
  dryRunOutcome(stop: DryRunStop): ClaimReconcile {
    return this.outcome('migrating', `${this.#state.phase} (${stop.message})`);
  }

  private outcome(result: 'migrating' | 'moved' | 'created', phase: string, error?: string): ClaimReconcile {
    const { input } = this;
    return {
      outcome: {
        claim: input.claim.key,
        result,
        actions: [...input.actions, `${this.#state.seedFrom ? 'seed' : 'migration'} ${phase}`],
        matchedLabel: this.#status.matchedLabel ?? input.binding.label,
        ...(this.#status.activeUser ? { activeUser: this.#status.activeUser } : {}),
        secretLocation: input.sink.location,
        ...(error ? { error } : {}),
      },
      ...(result === 'migrating' ? { requeueAfterMillis: MIGRATION_REQUEUE_MILLIS } : {}),
      ...(error ? { error: retryable(error) } : {}),
    };
  }
}

/**
 * Drops the link and canary of a migration that will not complete and retires its target
 * under its deletion policy. The secret never left the source; the next pass goes on from
 * there (a new migration if the claim now names a third place).
 */
async function abandon(
  context: ClaimContext,
  input: MigrationInput,
  state: MigrationState,
  status: ClaimStatus,
): Promise<ClaimReconcile> {
  const migration = new ClaimMigration(context, input, status, state);
  try {
    await abandonMigration(state, await migrationEndpoints(context, state), migration.hooks());
  } catch (error) {
    if (error instanceof DryRunStop) return migration.dryRunOutcome(error);
    return input.fail(
      retryable(`abandoning the migration to ${describe(state.target)}: ${errorMessage(error)}`),
    );
  }
  input.actions.push(`abandoned the migration to ${describe(state.target)}`);
  context.usage.add(state.target);
  const remaining = await cleanUpBindings(context, input.claim.key, [state.target], input.actions);
  const error = remaining.errors.length > 0 ? remaining.errors.join('; ') : null;
  const retired = [...status.retired, ...remaining.bindings];
  await context.ports.statuses.write({ ...status, retired, migration: null, error }, context.onStep);
  return {
    outcome: {
      claim: input.claim.key,
      result: 'updated',
      actions: input.actions,
      matchedLabel: status.matchedLabel ?? state.source.label,
      ...(status.activeUser ? { activeUser: status.activeUser } : {}),
      secretLocation: input.sink.location,
      ...(error ? { error } : {}),
    },
    requeueAfterMillis: 0,
    ...(error ? { error: retryable(error) } : {}),
  };
}

/**
 * Why a dbName change within one instance does not move: the claim's login roles are
 * per instance, so source and target would share them, and a move's cutover locks the
 * source's logins and its retirement drops them (the claim's own, still in use). Before
 * this refusal such a move hung in CREATE SUBSCRIPTION, which cannot make its slot on its
 * own server.
 */
function sameInstanceMove(source: Binding, target: Binding): string {
  return (
    `moving database ${source.databaseName} to ${target.databaseName} on the same instance ` +
    `${instanceId(source)} is not supported: the two databases would share the claim's login roles, ` +
    `which a move locks and retires on its source. The claim stays on ${source.databaseName}: ` +
    'set dbName back, or move to another instance'
  );
}

/** The two ends of `state`, as master sessions in the claim database on each instance. */
async function migrationEndpoints(context: ClaimContext, state: MigrationState): Promise<MigrationEndpoints> {
  if (state.seedFrom) return seedEndpoints(context, state, await openSeedSource(context, state.seedFrom));
  const source = await masterFor(context, state.source);
  const target = await masterFor(context, state.target);
  const session =
    (master: MasterConnection, database: string): DatabaseSession =>
    (work) =>
      master.inDatabase(database, work);
  const names = claimNames(state.source.userName, state.source.databaseName);
  return {
    source: session(source, state.source.databaseName),
    target: session(target, state.target.databaseName),
    sourceAddress: {
      host: state.source.host,
      port: state.source.port,
      database: state.source.databaseName,
      sslmode: source.target.fragment.sslmode,
    },
    describe: { source: instanceId(state.source), target: instanceId(state.target) },
    baseRole: names.baseRole,
    sourceUsers: names.users,
  };
}

/** A seed's ends: `source` as resolved, the claim's own database as the target. */
async function seedEndpoints(
  context: ClaimContext,
  state: MigrationState,
  source: SeedSourceEnd,
): Promise<MigrationEndpoints> {
  const target = await masterFor(context, state.target);
  return {
    source: source.session,
    target: (work) => target.inDatabase(state.target.databaseName, work),
    sourceAddress: {
      host: source.binding.host,
      port: source.binding.port,
      database: source.binding.databaseName,
      sslmode: source.sslmode,
    },
    describe: { source: instanceId(source.binding), target: instanceId(state.target) },
    baseRole: claimNames(state.target.userName, state.target.databaseName).baseRole,
    sourceReaderRole: source.readerRole,
    // Seeds are often from a database on the claim's own instance.
    slotFirst: true,
    // Nobody's sessions are drained from a seed's source.
    sourceUsers: [],
  };
}

/** A binding's master (an existing database's DSN login when it was used in place). */
function masterFor(context: ClaimContext, binding: Binding): Promise<MasterConnection> {
  return masterForBinding(context, binding);
}

function pointsAtBinding(published: PublishedCredentials, binding: Binding): boolean {
  const names = claimNames(binding.userName, binding.databaseName);
  return (
    published.host === binding.host &&
    published.port === binding.port &&
    published.database === binding.databaseName &&
    names.users.includes(published.username)
  );
}

function sameDatabase(a: Binding, b: Binding): boolean {
  return a.host === b.host && a.port === b.port && a.databaseName === b.databaseName;
}

function describe(binding: Binding): string {
  return `${instanceId(binding)}/${binding.databaseName}`;
}

/**
 * A claim deleted in the middle of a migration: drops the replication link (no slot may
 * keep WAL on the source for a claim that is gone) and the canary secret, and returns the
 * migration's locations the status does not list yet, for the deletion policy.
 */
export async function dropMigrationOf(context: ClaimContext, status: ClaimStatus): Promise<Binding[]> {
  const state = status.migration;
  if (!inProgress(state)) return [];
  const step = async (action: string) => {
    if (!(await performStep(context.onStep, { claim: status.claim, action }))) throw new DryRunStop(action);
  };
  const canary = context.ports.secretFor(status.namespace, `${status.secretName}${CANARY_SECRET_SUFFIX}`);
  await abandonMigration(state, await migrationEndpoints(context, state), {
    step,
    save: async () => {},
    publishTarget: async () => {},
    publishCanary: async () => canary.location,
    removeCanary: async () => {
      if (
        (await canary.read()) &&
        (await performStep(context.onStep, { claim: status.claim, action: 'remove-canary-secret' }))
      )
        await canary.remove();
    },
    cutoverApproved: false,
  });
  const listed = [...(status.binding ? [status.binding] : []), ...status.retired];
  // A seed's source is someone else's database: only the claim's own target is its to retire.
  const own = state.seedFrom ? [state.target] : [state.source, state.target];
  return own.filter((b) => !listed.some((known) => sameDatabase(known, b)));
}
