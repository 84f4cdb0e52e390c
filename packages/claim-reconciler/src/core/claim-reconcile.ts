/**
 * One claim's reconcile, shaped like a controller-runtime `Reconciler`:
 *
 *   ensure database objects → observe credentials → plan (pure) → apply → result
 *
 * - The database objects (database, base role, two login users) are brought to the wanted
 *   shape first by {@link Provisioner.ensure}, itself an observe-then-create of what is
 *   missing, idempotent at every statement.
 * - {@link observeCredentials} reads what is published and whether it logs in.
 * - {@link planCredentials} decides, with no I/O, whether to rotate (and to which user),
 *   republish, keep, or wait; it is unit-tested on plain values.
 * - {@link applyCredentials} carries the plan out in the one safe order: set a fresh
 *   password on the user the secret does NOT name → verify a login with it → publish →
 *   write the status.
 * - The result says when to come back (`requeueAfterMillis`, the next rotation) and keeps
 *   an error as a value (`retryable` or `terminal`) until the driver's edge makes it text.
 *
 * How a driver plugs in: it builds a {@link ClaimContext} per pass (master connections,
 * usage index, {@link ClaimPorts}, its publisher id) and calls {@link reconcileClaim} per
 * claim (or `deleteClaim` for a claim that is gone), and requeues by the result.
 * - Locking is inside: each claim runs under the PostgreSQL advisory lock of its users on
 *   the instance (`MasterConnection.withAdvisoryLock`, {@link claimLockName}), then the
 *   sink's own lock (`SecretSink.lock`: a lock file in folder mode).
 * - The secret is published through {@link SecretSink} (`ports.secretFor(namespace,
 *   name)`): the folder mode uses the kubelet-style folder writer (`SecretPublisher`); a
 *   Kubernetes controller passes a Secret writer.
 * - The status is stored through {@link StatusStore} (`ports.statuses`): a status file in
 *   folder mode, the claim's status subresource in the controller.
 * - `ports.publisherId` names the one publisher of each claim (recorded on its base role);
 *   the controller uses its own id, so a folder and a cluster never both publish one
 *   claim.
 * - An instance change (the secret points at a location the claim no longer wants) goes
 *   to {@link reconcileMigration} before any plan: the data moves by an online migration,
 *   which publishes the target itself at cutover and retires the source afterwards.
 * - Spec fields a driver cannot honour are refused in one place, `REFUSED_SPEC_FIELDS`
 *   (claim-schema.ts).
 * - `useExistingSource` (existing-source.ts): the binding is the existing database the
 *   DSN names and the master is the DSN's login; everything after that is the same path.
 */

import { CREDENTIAL_FAILURE_CODES } from 'hotload-core';
import { cleanUpBindings } from './binding-cleanup.js';
import type { ClaimContext } from './claim-context.js';
import { reconcileMigration } from './claim-migration.js';
import type { ClaimOutcome, ClaimReconcile, ClaimResult } from './claim-outcome.js';
import type { ClaimPorts, SecretSink, StatusStore } from './claim-ports.js';
import type { DatabaseClaim } from './claim-schema.js';
import { type Binding, type ClaimStatus, emptyStatus } from './claim-status.js';
import { errorMessage } from './error-message.js';
import {
  assertCanManageInPlace,
  existingSourceBinding,
  existingSourceSwitchProblem,
} from './existing-source.js';
import { matchFragmentKey } from './fragment-matcher.js';
import { type InstanceTarget, instanceId } from './instance-target.js';
import { type LoginResult, tryLogin } from './pg-connection.js';
import { type ClaimNames, claimNames, Provisioner, ProvisioningConflictError } from './provisioner.js';
import { type ReconcileError, retryable, terminal } from './reconcile-result.js';
import type { PasswordSettings, ReconcilerConfig, SslModeSetting } from './reconciler-config.js';
import { inactiveUser, passwordSetAt, rotationReason, setVerifiedPassword } from './rotation.js';
import type { PublishedCredentials } from './secret-layout.js';
import { UnsafeIdentifierError } from './sql-identifiers.js';
import { performStep } from './steps.js';

export type { ClaimContext, ClaimPorts, SecretSink, StatusStore };

/** Where the claim's users log in: everything of the secret but user and password. */
export interface LoginTarget {
  /** The instance's host. */
  readonly host: string;
  /** The instance's port. */
  readonly port: number;
  /** The claim's database. */
  readonly database: string;
  /** The fragment key's sslmode. */
  readonly sslmode: SslModeSetting;
  /** The fragment key's CA bundle file, if it names one (published as `ca.crt`). */
  readonly sslrootcert?: string;
}

/** What is published for a claim and whether it works. */
export interface CredentialObservation {
  /** The claim's recorded status, if any. */
  readonly status: ClaimStatus | undefined;
  /** What the claim's secret holds now (undefined when there is none or it is incomplete). */
  readonly published: PublishedCredentials | undefined;
  /** When the secret's current content was published, if known. */
  readonly publishedAt: Date | undefined;
  /** The login check of the published credentials; only when they point at `login`. */
  readonly login: LoginResult | undefined;
  /** Publishing the same credentials with the claim's `dsnName` would change the secret. */
  readonly keysDiffer: boolean;
}

/** What to do with the claim's credentials. */
export type CredentialPlan =
  | {
      readonly kind: 'rotate';
      /** The user that gets the fresh password (never the one the secret names). */
      readonly user: string;
      readonly reason: string;
      readonly result: Extract<ClaimResult, 'created' | 'moved' | 'rotated' | 'repaired'>;
    }
  | { readonly kind: 'republish' }
  | { readonly kind: 'keep' }
  | { readonly kind: 'wait'; readonly error: ReconcileError };

/** Inputs of {@link planCredentials}: plain values, no I/O. */
export interface PlanInput {
  /** The claim's database and role names. */
  readonly names: ClaimNames;
  /** Where the claim's users should log in now. */
  readonly login: LoginTarget;
  /** What is published and whether it logs in. */
  readonly observed: CredentialObservation;
  /** The time of the reconcile (password ages are measured against it). */
  readonly now: Date;
  /** The password settings (rotation period). */
  readonly settings: PasswordSettings;
  /** Rotate whatever the password's age (`--rotate`). */
  readonly forceRotation: boolean;
}

/** Whether the published secret names one of the claim's users at the claim's database. */
export function pointsAt(
  published: PublishedCredentials | undefined,
  login: LoginTarget,
  names: ClaimNames,
): published is PublishedCredentials {
  return (
    published !== undefined &&
    published.host === login.host &&
    published.port === login.port &&
    published.database === login.database &&
    published.sslmode === login.sslmode &&
    names.users.includes(published.username)
  );
}

/** Decides what to do with the credentials. Pure: same input, same plan. */
export function planCredentials(input: PlanInput): CredentialPlan {
  const { names, login, observed, now, settings, forceRotation } = input;
  const { published } = observed;
  const rotate = (reason: string, result: Extract<CredentialPlan, { kind: 'rotate' }>['result']) =>
    ({ kind: 'rotate', user: inactiveUser(names.users, published?.username), reason, result }) as const;
  if (!published) return rotate('first publish', 'created');
  if (!pointsAt(published, login, names))
    return rotate(`target changed to ${instanceId(login)}/${login.database}`, 'moved');
  const check = observed.login;
  if (check && !check.ok) {
    // Only a rejected credential calls for a repair. Anything else (server starting, too
    // many connections, network) says nothing about the password, and rotating would reset
    // the previous user that draining pools still rely on: retry later.
    if (!isCredentialRejection(check.code))
      return { kind: 'wait', error: retryable(`cannot check the published credentials: ${check.reason}`) };
    return rotate(`published credentials do not log in (${check.reason})`, 'repaired');
  }
  const setAt = passwordSetAt(observed.status, published.username, observed.publishedAt);
  const reason = rotationReason({ now, passwordSetAt: setAt, settings, forced: forceRotation });
  if (reason) return rotate(reason, 'rotated');
  return observed.keysDiffer ? { kind: 'republish' } : { kind: 'keep' };
}

/** How long until the active password is due for rotation (the driver's requeue delay). */
export function nextRotationInMillis(
  settings: PasswordSettings,
  setAt: Date | undefined,
  now: Date,
): number | undefined {
  if (setAt === undefined) return undefined;
  return Math.max(0, setAt.getTime() + settings.rotationPeriodMinutes * 60_000 - now.getTime());
}

/** Where `claim` wants its database, or undefined when its label matches no fragment key. */
export function desiredBinding(config: ReconcilerConfig, claim: DatabaseClaim): Binding | undefined {
  const label = matchFragmentKey(claim.instanceLabel, config.fragmentKeys.keys());
  const fragment = label === undefined ? undefined : config.fragmentKeys.get(label);
  if (label === undefined || fragment === undefined) return undefined;
  return {
    label,
    host: claim.host ?? fragment.host,
    port: claim.port ?? fragment.port,
    databaseName: claim.databaseName,
    userName: claim.userName,
    deletionPolicy: claim.deletionPolicy ?? fragment.deletionPolicy ?? config.defaultDeletionPolicy,
  };
}

/** Reads the published secret and status, and checks a login when the secret points here. */
export async function observeCredentials(
  sink: SecretSink,
  statuses: StatusStore,
  claim: DatabaseClaim,
  login: LoginTarget,
  names: ClaimNames,
): Promise<CredentialObservation> {
  const status = await statuses.read(claim.namespace, claim.secretName);
  const published = await sink.read();
  const publishedAt = await sink.publishedAt();
  const here = pointsAt(published, login, names);
  return {
    status,
    published,
    publishedAt,
    login: here
      ? await tryLogin({ ...login, user: published.username, password: published.password })
      : undefined,
    keysDiffer: here ? await sink.differs(published, claim.dsnName) : true,
  };
}

/** The error kind of something thrown while reconciling: conflicts and bad names are terminal. */
export function classifyError(error: unknown): ReconcileError {
  const message = errorMessage(error);
  return error instanceof ProvisioningConflictError || error instanceof UnsafeIdentifierError
    ? terminal(message)
    : retryable(message);
}

/** Reconciles one claim: ensure → observe → plan → apply. Never throws. */
export async function reconcileClaim(
  context: ClaimContext,
  claim: DatabaseClaim,
  forceRotation: boolean,
): Promise<ClaimReconcile> {
  const { config, ports, metrics } = context;
  const wanted = desiredBinding(config, claim);
  if (!wanted) {
    const known = [...config.fragmentKeys.keys()].join(', ') || 'none';
    return recordClaimError(
      context,
      claim,
      terminal(`instanceLabel "${claim.instanceLabel}" matches no fragment key (known: ${known})`),
      null,
    );
  }
  let binding = wanted;
  const fragment = config.fragmentKeys.get(binding.label)!;
  let target: InstanceTarget = { label: binding.label, host: binding.host, port: binding.port, fragment };
  const sink = ports.secretFor(claim.namespace, claim.secretName);
  const actions: string[] = [];
  // The plan, once made: a failure after it counts as a failed rotation, before it as a
  // failed provisioning (the controller's two error metrics).
  let planned: CredentialPlan | undefined;
  try {
    if (claim.useExistingSource) {
      // The users live on the existing database, managed through its DSN's login.
      ({ binding, target } = await existingSourceBinding(context, claim, wanted.deletionPolicy));
      const problem = existingSourceSwitchProblem(
        await ports.statuses.read(claim.namespace, claim.secretName),
        binding,
      );
      if (problem) return await recordClaimError(context, claim, terminal(problem), binding.label, actions);
    }
    const master = await context.connections.get(target);
    if (binding.existingSource) await assertCanManageInPlace(master, binding);
    // One reconciler at a time per claim users on an instance (claimLockName), and one
    // writer at a time per secret (the sink's lock).
    const locked = <T>(work: () => Promise<T>) =>
      master.withAdvisoryLock(claimLockName(claim.userName), () => sink.lock(work));
    return await locked(async () => {
      const started = performance.now();
      const names = claimNames(claim.userName, binding.databaseName);
      const provisioner = Provisioner.create(master, names, claim.key, context.onStep);
      const ensured = await provisioner.ensure({ publisher: context.publisher, takeOver: context.takeOver });
      if (ensured.databaseCreated) {
        actions.push(`created database ${names.database}`);
        metrics?.databaseCreated?.();
      }
      if (ensured.rolesCreated.length > 0) actions.push(`created roles ${ensured.rolesCreated.join(', ')}`);
      if (binding.existingSource && (await provisioner.grantExistingObjects()))
        actions.push(
          `granted ${names.baseRole} the existing tables and sequences of ${names.database}.public`,
        );
      const usersCreated = ensured.rolesCreated.filter((role) => role !== names.baseRole).length;
      if (usersCreated > 0) metrics?.usersCreated(usersCreated, (performance.now() - started) / 1000);

      const login: LoginTarget = {
        host: binding.host,
        port: binding.port,
        database: names.database,
        sslmode: target.fragment.sslmode,
        sslrootcert: target.fragment.sslrootcert,
      };
      const observed = await observeCredentials(sink, ports.statuses, claim, login, names);
      const moving = await reconcileMigration(context, {
        claim,
        binding,
        sink,
        status: observed.status,
        published: observed.published,
        actions,
        fail: (error) => recordClaimError(context, claim, error, binding.label, actions),
      });
      if (moving) return moving;
      const plan = planCredentials({
        names,
        login,
        observed,
        now: context.now,
        settings: config.password,
        forceRotation,
      });
      if (plan.kind === 'wait') return recordClaimError(context, claim, plan.error, binding.label, actions);
      planned = plan;
      return await applyCredentials(context, {
        claim,
        binding,
        login,
        provisioner,
        sink,
        observed,
        plan,
        ensured,
        actions,
      });
    });
  } catch (error) {
    metrics?.provisioningError();
    if (planned?.kind === 'rotate') metrics?.passwordRotateError();
    else metrics?.userCreateError();
    return recordClaimError(context, claim, classifyError(error), binding.label, actions);
  }
}

/** Everything {@link applyCredentials} acts on. */
interface ApplyInput {
  readonly claim: DatabaseClaim;
  readonly binding: Binding;
  readonly login: LoginTarget;
  readonly provisioner: Provisioner;
  readonly sink: SecretSink;
  readonly observed: CredentialObservation;
  readonly plan: Exclude<CredentialPlan, { kind: 'wait' }>;
  readonly ensured: { readonly databaseCreated: boolean };
  readonly actions: string[];
}

/** Carries out a plan: password → verify → publish → clean up retired bindings → status. */
async function applyCredentials(context: ClaimContext, input: ApplyInput): Promise<ClaimReconcile> {
  const { claim, binding, login, provisioner, sink, observed, plan, actions } = input;
  const { config, onStep, metrics, now } = context;
  const { status, published } = observed;
  let result: ClaimResult = plan.kind === 'rotate' ? plan.result : 'unchanged';
  let activeUser = published?.username;
  let userUpdatedAt = status?.userUpdatedAt ?? null;
  let connectionInfoUpdatedAt = status?.connectionInfoUpdatedAt ?? null;
  let setAt: Date | undefined;
  const announce = async (action: string) => {
    await onStep?.({ claim: claim.key, action });
  };
  const publish = async (credentials: PublishedCredentials) => {
    if (await performStep(onStep, { claim: claim.key, action: 'publish-secret' }))
      await sink.publish(credentials, claim.dsnName, announce);
  };
  // A publish killed midway may have left a whole copy of an earlier secret: remove it.
  if (
    (await sink.stale()).length > 0 &&
    (await performStep(onStep, { claim: claim.key, action: 'sweep-secret' }))
  )
    await sink.sweep();
  if (plan.kind === 'rotate') {
    const rotationStarted = performance.now();
    const password = await setVerifiedPassword(provisioner, plan.user, config.password, login);
    await publish({ ...login, username: plan.user, password });
    actions.push(`${plan.reason}: published ${plan.user}`);
    activeUser = plan.user;
    userUpdatedAt = now.toISOString();
    connectionInfoUpdatedAt = userUpdatedAt;
    setAt = now;
    metrics?.passwordRotated((performance.now() - rotationStarted) / 1000);
  } else {
    if (status?.activeUser !== activeUser)
      userUpdatedAt = observed.publishedAt?.toISOString() ?? now.toISOString();
    setAt = passwordSetAt(status, published!.username, observed.publishedAt);
    if (plan.kind === 'republish') {
      // Same credentials, but the set of keys differs (e.g. a new dsnName).
      await publish(published!);
      actions.push('republished secret keys');
      connectionInfoUpdatedAt = now.toISOString();
      result = 'updated';
    }
  }

  const retired = retiredBindings(status, binding, context);
  const remaining = await cleanUpBindings(context, claim.key, retired, actions);
  const sameDatabase = status?.binding && sameDatabaseLocation(status.binding, binding);
  const next: ClaimStatus = {
    claim: claim.key,
    namespace: claim.namespace,
    secretName: claim.secretName,
    error: remaining.errors.length > 0 ? remaining.errors.join('; ') : null,
    matchedLabel: binding.label,
    binding,
    activeUser: activeUser ?? null,
    dbCreatedAt:
      input.ensured.databaseCreated || !sameDatabase
        ? now.toISOString()
        : (status?.dbCreatedAt ?? now.toISOString()),
    connectionInfoUpdatedAt,
    userUpdatedAt,
    retired: remaining.bindings,
    deleting: false,
    // The last migration's record stays until the next one starts.
    ...(status?.migration ? { migration: status.migration } : {}),
  };
  if ((await context.ports.statuses.write(next, onStep)) && result === 'unchanged') result = 'updated';
  const outcome: ClaimOutcome = {
    claim: claim.key,
    result,
    actions,
    matchedLabel: binding.label,
    activeUser,
    secretLocation: sink.location,
    ...(next.error ? { error: next.error } : {}),
  };
  const requeueAfterMillis = nextRotationInMillis(config.password, setAt, now);
  return {
    outcome,
    ...(requeueAfterMillis === undefined ? {} : { requeueAfterMillis }),
    ...(next.error ? { error: retryable(next.error) } : {}),
  };
}

/** The status's retired bindings plus its previous binding when the claim moved away from it. */
function retiredBindings(
  status: ClaimStatus | undefined,
  binding: Binding,
  context: ClaimContext,
): Binding[] {
  const retired = [...(status?.retired ?? [])];
  const previous = status?.binding;
  if (previous && !sameLocation(previous, binding) && !retired.some((b) => sameLocation(b, previous))) {
    retired.push(previous);
    context.usage.add(previous);
  }
  return retired;
}

/** Records `error` in the claim's status, keeping everything else (the secret stays as is). */
export async function recordClaimError(
  context: Pick<ClaimContext, 'ports' | 'onStep'>,
  claim: DatabaseClaim,
  error: ReconcileError,
  matchedLabel: string | null = null,
  actions: string[] = [],
): Promise<ClaimReconcile> {
  const { statuses } = context.ports;
  const previous = await statuses.read(claim.namespace, claim.secretName);
  const next: ClaimStatus = {
    ...emptyStatus(claim),
    ...previous,
    error: error.message,
    matchedLabel,
  };
  const location = context.ports.secretFor(claim.namespace, claim.secretName).location;
  try {
    await statuses.write(next, context.onStep);
  } catch (writeError) {
    const message = `${error.message}; status not written: ${errorMessage(writeError)}`;
    return {
      outcome: { claim: claim.key, result: 'error', actions, error: message, secretLocation: location },
      error: { kind: error.kind, message },
    };
  }
  return {
    outcome: {
      claim: claim.key,
      result: 'error',
      actions,
      error: error.message,
      secretLocation: location,
      ...(matchedLabel ? { matchedLabel } : {}),
    },
    error,
  };
}

/** The advisory lock name of a claim's users (`userName`, `_a`, `_b`) on an instance. */
export function claimLockName(userName: string): string {
  return `claim-users:${userName}`;
}

/** A login refused for its credentials (hotload-core's one list of those SQLSTATEs). */
function isCredentialRejection(code: string | undefined): boolean {
  return code !== undefined && CREDENTIAL_FAILURE_CODES.includes(code);
}

function sameDatabaseLocation(a: Binding, b: Binding): boolean {
  return a.host === b.host && a.port === b.port && a.databaseName === b.databaseName;
}

/** Same database and same users. */
export function sameLocation(a: Binding, b: Binding): boolean {
  return sameDatabaseLocation(a, b) && a.userName === b.userName;
}
