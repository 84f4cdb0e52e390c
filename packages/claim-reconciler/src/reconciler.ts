/**
 * The reconcile loop, Kubernetes-controller style: for each claim, observe (what exists in
 * PostgreSQL, the published secret, the status file), compare with what the claim asks
 * for, and take the smallest next step. Every step is idempotent and ordered so that the
 * published secret always names a user whose password logs in:
 *
 *   set a fresh password on a user the secret does NOT name → verify a login with it →
 *   publish the secret (atomic swap) → write the status (temp + rename)
 *
 * The secret is the source of truth for the active user; the status only adds timestamps
 * and where earlier databases live (for instance changes and deletions).
 */
import { type HotloadLogger, redactError } from 'hotload-core';
import type { DatabaseClaim } from './claim-schema.js';
import {
  type Binding,
  type ClaimStatus,
  listStatuses,
  readStatus,
  removeStatus,
  statusPath,
  writeStatus,
} from './claim-status.js';
import { matchFragmentKey } from './fragment-matcher.js';
import { type InstanceTarget, instanceId, MasterConnections } from './master-connection.js';
import type { ReconcilerMetrics } from './metrics.js';
import { logOutcome } from './outcome-logging.js';
import { tryLogin } from './pg-connection.js';
import { claimNames, Provisioner } from './provisioner.js';
import type { ReconcilerConfig } from './reconciler-config.js';
import { inactiveUser, passwordSetAt, rotationReason, setVerifiedPassword } from './rotation.js';
import { type PublishedCredentials, SecretPublisher, secretDirectory } from './secret-publisher.js';
import type { StepHook } from './steps.js';

/** What happened to one claim in a pass. */
export type ClaimResult =
  | 'created'
  | 'rotated'
  | 'repaired'
  | 'moved'
  | 'updated'
  | 'unchanged'
  | 'deleted'
  | 'deletion-pending'
  | 'error';

/** The outcome of one claim in a pass. Never holds a password. */
export interface ClaimOutcome {
  /** `namespace/name`. */
  readonly claim: string;
  readonly result: ClaimResult;
  /** Human-readable steps taken, e.g. `created database app`, `rotated to app_b`. */
  readonly actions: readonly string[];
  readonly error?: string;
  readonly matchedLabel?: string;
  readonly activeUser?: string;
  /** Folder of the published secret. */
  readonly secretDirectory: string;
}

/** Options of {@link Reconciler}. */
export interface ReconcilerOptions {
  readonly config: ReconcilerConfig;
  /** Secrets go to `<outputDir>/<namespace>/<secretName>/`, statuses beside them. */
  readonly outputDir: string;
  /** Called before every state-changing step (SQL write, secret publish, status write). */
  readonly onStep?: StepHook;
  /** Called as each claim finishes, for progress output. */
  readonly onOutcome?: (outcome: ClaimOutcome) => void;
  /** Clock (tests move it forward to trigger rotations). */
  readonly now?: () => Date;
  /** Claims reconciled at the same time; default 8. */
  readonly concurrency?: number;
  /** Metrics sink (see {@link prometheusMetrics}); none by default. */
  readonly metrics?: ReconcilerMetrics;
  /** A pino-compatible logger: one line per claim outcome. Default: silent. */
  readonly logger?: HotloadLogger;
}

/** Options of one {@link Reconciler.reconcile} pass. */
export interface PassOptions {
  /** Rotate every claim's password now, whatever its age. */
  readonly rotate?: boolean;
  /**
   * Keys (`namespace/name`) of claims that exist but failed validation: they are neither
   * reconciled nor treated as deleted.
   */
  readonly presentInvalidClaims?: ReadonlySet<string>;
  /**
   * False when some claim document could not even be identified (broken YAML): deletions
   * are then skipped, since a missing claim might only be unreadable. Default true.
   */
  readonly claimSetComplete?: boolean;
}

/** The result of a pass. */
export interface PassResult {
  readonly outcomes: readonly ClaimOutcome[];
  /** True when deletions were skipped because the claim set was incomplete. */
  readonly deletionsSkipped: boolean;
}

/** Counts how many bindings use a database or a role set on an instance. */
class UsageIndex {
  readonly #counts = new Map<string, number>();

  add(binding: Binding): void {
    for (const key of UsageIndex.keys(binding)) this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  remove(binding: Binding): void {
    for (const key of UsageIndex.keys(binding)) this.#counts.set(key, (this.#counts.get(key) ?? 1) - 1);
  }

  databaseInUse(binding: Binding): boolean {
    return (this.#counts.get(UsageIndex.keys(binding)[0]!) ?? 0) > 0;
  }

  rolesInUse(binding: Binding): boolean {
    return (this.#counts.get(UsageIndex.keys(binding)[1]!) ?? 0) > 0;
  }

  static keys(binding: Binding): [string, string] {
    const instance = instanceId(binding);
    return [`db:${instance}/${binding.databaseName}`, `role:${instance}/${binding.userName}`];
  }
}

/** Reconciles a set of claims against PostgreSQL instances and an output folder. */
export class Reconciler {
  readonly #options: ReconcilerOptions;
  readonly #now: () => Date;

  constructor(options: ReconcilerOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => new Date());
  }

  /**
   * One pass over `claims`: provision, rotate, republish as needed, then apply the
   * deletion policy of claims whose status exists but whose claim is gone.
   */
  async reconcile(claims: readonly DatabaseClaim[], pass: PassOptions = {}): Promise<PassResult> {
    const connections = new MasterConnections(Math.min(this.#options.concurrency ?? 8, 8));
    try {
      const statuses = await listStatuses(this.#options.outputDir);
      const present = new Set([...claims.map((c) => c.key), ...(pass.presentInvalidClaims ?? [])]);
      const usage = new UsageIndex();
      const desired = new Map<string, Binding>();
      for (const claim of claims) {
        const binding = this.desiredBinding(claim);
        if (binding) desired.set(claim.key, binding);
      }
      for (const { status } of statuses) {
        for (const binding of status.retired) usage.add(binding);
        if (!desired.has(status.claim) && status.binding) usage.add(status.binding);
      }
      for (const binding of desired.values()) usage.add(binding);
      const conflicts = findConflicts(claims, desired);

      const outcomes = await mapConcurrently(claims, this.#options.concurrency ?? 8, async (claim) => {
        const conflict = conflicts.get(claim.key);
        const started = performance.now();
        const outcome = conflict
          ? await this.recordError(claim, conflict)
          : await this.reconcileClaim(claim, connections, usage, pass.rotate ?? false);
        this.#options.metrics?.claimLoaded((performance.now() - started) / 1000);
        this.#reportOutcome(outcome);
        return outcome;
      });

      const deletionsSkipped = pass.claimSetComplete === false;
      if (!deletionsSkipped) {
        for (const { path, status } of statuses) {
          if (present.has(status.claim)) continue;
          const outcome = await this.deleteClaim(path, status, connections, usage);
          this.#reportOutcome(outcome);
          outcomes.push(outcome);
        }
      }
      this.#options.metrics?.claimStates?.(countByResult(outcomes));
      return { outcomes, deletionsSkipped };
    } finally {
      await connections.closeAll();
    }
  }

  #reportOutcome(outcome: ClaimOutcome): void {
    if (this.#options.logger) logOutcome(this.#options.logger, outcome);
    this.#options.onOutcome?.(outcome);
  }

  /** Where `claim` wants its database, or undefined when its label matches no fragment key. */
  desiredBinding(claim: DatabaseClaim): Binding | undefined {
    const { config } = this.#options;
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

  private async reconcileClaim(
    claim: DatabaseClaim,
    connections: MasterConnections,
    usage: UsageIndex,
    forceRotation: boolean,
  ): Promise<ClaimOutcome> {
    const { config, outputDir, onStep } = this.#options;
    const path = statusPath(outputDir, claim.namespace, claim.secretName);
    const publisher = new SecretPublisher(secretDirectory(outputDir, claim.namespace, claim.secretName));
    const status = await readStatus(path);
    const binding = this.desiredBinding(claim);
    if (!binding) {
      const known = [...config.fragmentKeys.keys()].join(', ') || 'none';
      return this.recordError(
        claim,
        `instanceLabel "${claim.instanceLabel}" matches no fragment key (known: ${known})`,
        null,
      );
    }
    const fragment = config.fragmentKeys.get(binding.label)!;
    const target: InstanceTarget = { label: binding.label, host: binding.host, port: binding.port, fragment };
    const actions: string[] = [];
    const metrics = this.#options.metrics;
    let phase: 'provision' | 'rotate' = 'provision';
    try {
      const started = performance.now();
      const names = claimNames(claim.userName, claim.databaseName);
      const master = await connections.get(target);
      const provisioner = Provisioner.create(master, names, claim.key, onStep);
      const ensured = await provisioner.ensure();
      if (ensured.databaseCreated) {
        actions.push(`created database ${names.database}`);
        metrics?.databaseCreated?.();
      }
      if (ensured.rolesCreated.length > 0) actions.push(`created roles ${ensured.rolesCreated.join(', ')}`);
      const usersCreated = ensured.rolesCreated.filter((role) => role !== names.baseRole).length;
      if (usersCreated > 0) metrics?.usersCreated(usersCreated, (performance.now() - started) / 1000);

      const now = this.#now();
      const login = {
        host: binding.host,
        port: binding.port,
        database: names.database,
        sslmode: fragment.sslmode,
      };
      const published = await publisher.read();
      const pointsHere =
        published !== undefined &&
        published.host === login.host &&
        published.port === login.port &&
        published.database === login.database &&
        published.sslmode === login.sslmode &&
        names.users.includes(published.username);

      let reason: string | undefined;
      let result: ClaimResult;
      if (!published) {
        reason = 'first publish';
        result = 'created';
      } else if (!pointsHere) {
        reason = `target changed to ${instanceId(binding)}/${names.database}`;
        result = 'moved';
      } else {
        const check = await tryLogin({ ...login, user: published.username, password: published.password });
        // Only a rejected credential calls for a repair. Anything else (server starting,
        // too many connections, network) says nothing about the password, and rotating
        // would reset the previous user that draining pools still rely on: retry later.
        if (!check.ok && !isCredentialRejection(check.code)) {
          throw new Error(`cannot check the published credentials: ${check.reason}`);
        }
        const setAt = passwordSetAt(status, published.username, await publisher.publishedAt());
        reason = check.ok
          ? rotationReason({ now, passwordSetAt: setAt, settings: config.password, forced: forceRotation })
          : `published credentials do not log in (${check.reason})`;
        result = check.ok ? 'rotated' : 'repaired';
      }

      let activeUser = published?.username;
      let userUpdatedAt = status?.userUpdatedAt ?? null;
      let connectionInfoUpdatedAt = status?.connectionInfoUpdatedAt ?? null;
      if (reason) {
        phase = 'rotate';
        const rotationStarted = performance.now();
        const user = inactiveUser(names.users, published?.username);
        const password = await setVerifiedPassword(provisioner, user, config.password, login);
        await onStep?.({ claim: claim.key, action: 'publish-secret' });
        await publisher.publish({ ...login, username: user, password }, claim.dsnName);
        actions.push(`${reason}: published ${user}`);
        activeUser = user;
        userUpdatedAt = now.toISOString();
        connectionInfoUpdatedAt = userUpdatedAt;
        metrics?.passwordRotated((performance.now() - rotationStarted) / 1000);
      } else {
        result = 'unchanged';
        if (status?.activeUser !== activeUser)
          userUpdatedAt = (await publisher.publishedAt())?.toISOString() ?? now.toISOString();
        // Same credentials, but the set of keys may differ (e.g. a new dsnName).
        const credentials: PublishedCredentials = published!;
        if (await publisher.differs(credentials, claim.dsnName)) {
          await onStep?.({ claim: claim.key, action: 'publish-secret' });
          await publisher.publish(credentials, claim.dsnName);
          actions.push('republished secret keys');
          connectionInfoUpdatedAt = now.toISOString();
          result = 'updated';
        }
      }

      const retired = [...(status?.retired ?? [])];
      if (
        status?.binding &&
        !sameLocation(status.binding, binding) &&
        !retired.some((b) => sameLocation(b, status.binding!))
      ) {
        retired.push(status.binding);
        usage.add(status.binding);
      }
      const remaining = await this.cleanUp(claim.key, retired, connections, usage, actions);
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
          ensured.databaseCreated || !sameDatabase
            ? now.toISOString()
            : (status?.dbCreatedAt ?? now.toISOString()),
        connectionInfoUpdatedAt,
        userUpdatedAt,
        retired: remaining.bindings,
        deleting: false,
      };
      if ((await writeStatus(path, next, onStep)) && result === 'unchanged') result = 'updated';
      return {
        claim: claim.key,
        result,
        actions,
        matchedLabel: binding.label,
        activeUser,
        secretDirectory: publisher.directory,
        ...(next.error ? { error: next.error } : {}),
      };
    } catch (error) {
      metrics?.provisioningError();
      if (phase === 'rotate') metrics?.passwordRotateError();
      else metrics?.userCreateError();
      return this.recordError(claim, errorMessage(error), binding.label, actions);
    }
  }

  /**
   * Applies the deletion policy to bindings no longer used by this claim. `Delete` drops a
   * database (and then the roles) only when no other binding uses it; a drop that fails
   * (sessions still connected) stays pending for the next pass.
   */
  private async cleanUp(
    claimKey: string,
    bindings: readonly Binding[],
    connections: MasterConnections,
    usage: UsageIndex,
    actions: string[],
  ): Promise<{ bindings: Binding[]; errors: string[] }> {
    const pending: Binding[] = [];
    const errors: string[] = [];
    for (const binding of bindings) {
      const where = `${instanceId(binding)}/${binding.databaseName}`;
      usage.remove(binding);
      if (binding.deletionPolicy === 'Orphan') {
        actions.push(`left ${where} in place (Orphan)`);
        continue;
      }
      try {
        const fragment = this.#options.config.fragmentKeys.get(binding.label);
        if (!fragment) throw new Error(`fragment key ${binding.label} is no longer configured`);
        const master = await connections.get({
          label: binding.label,
          host: binding.host,
          port: binding.port,
          fragment,
        });
        const provisioner = Provisioner.create(
          master,
          claimNames(binding.userName, binding.databaseName),
          claimKey,
          this.#options.onStep,
        );
        let databaseLeft = usage.databaseInUse(binding);
        if (databaseLeft) {
          actions.push(`kept ${where}: another claim uses it`);
        } else if ((await provisioner.dropDatabase()) === 'not-ours') {
          // Pre-existing (or someone else's) database this claim was only granted access to.
          databaseLeft = true;
          actions.push(`left database ${where} in place: not created by this reconciler`);
        } else {
          actions.push(`dropped database ${where}`);
        }
        if (databaseLeft && !usage.databaseInUse(binding) && !usage.rolesInUse(binding)) {
          // The roles hold privileges (and maybe objects) in the database that stays.
          actions.push(
            `left roles ${binding.userName}, ${binding.userName}_a, ${binding.userName}_b on ${instanceId(binding)} in place: they hold privileges in ${binding.databaseName}`,
          );
        }
        if (!databaseLeft && !usage.rolesInUse(binding)) {
          const { dropped, kept } = await provisioner.dropRoles();
          if (dropped.length > 0)
            actions.push(`dropped roles ${dropped.join(', ')} on ${instanceId(binding)}`);
          if (kept.length > 0) {
            actions.push(
              `left roles ${kept.join(', ')} on ${instanceId(binding)} in place: not created by this reconciler`,
            );
          }
        }
      } catch (error) {
        usage.add(binding);
        pending.push(binding);
        errors.push(`clean-up of ${where} pending: ${errorMessage(error)}`);
      }
    }
    return { bindings: pending, errors };
  }

  /** The claim is gone: remove its secret, apply its deletion policy, then its status. */
  private async deleteClaim(
    path: string,
    status: ClaimStatus,
    connections: MasterConnections,
    usage: UsageIndex,
  ): Promise<ClaimOutcome> {
    const { outputDir, onStep } = this.#options;
    const publisher = new SecretPublisher(secretDirectory(outputDir, status.namespace, status.secretName));
    const actions: string[] = [];
    try {
      await onStep?.({ claim: status.claim, action: 'remove-secret' });
      await publisher.remove();
      actions.push('removed secret');
      const bindings = status.binding ? [status.binding, ...status.retired] : [...status.retired];
      const remaining = await this.cleanUp(status.claim, bindings, connections, usage, actions);
      if (remaining.bindings.length === 0) {
        await removeStatus(path, status.claim, onStep);
        return { claim: status.claim, result: 'deleted', actions, secretDirectory: publisher.directory };
      }
      const error = remaining.errors.join('; ');
      await writeStatus(
        path,
        { ...status, binding: null, activeUser: null, retired: remaining.bindings, deleting: true, error },
        onStep,
      );
      return {
        claim: status.claim,
        result: 'deletion-pending',
        actions,
        error,
        secretDirectory: publisher.directory,
      };
    } catch (error) {
      return {
        claim: status.claim,
        result: 'error',
        actions,
        error: errorMessage(error),
        secretDirectory: publisher.directory,
      };
    }
  }

  /** Records `error` in the claim's status, keeping everything else (the secret stays as is). */
  private async recordError(
    claim: DatabaseClaim,
    error: string,
    matchedLabel: string | null = null,
    actions: string[] = [],
  ): Promise<ClaimOutcome> {
    const { outputDir, onStep } = this.#options;
    const path = statusPath(outputDir, claim.namespace, claim.secretName);
    const previous = await readStatus(path);
    const next: ClaimStatus = {
      claim: claim.key,
      namespace: claim.namespace,
      secretName: claim.secretName,
      binding: null,
      activeUser: null,
      dbCreatedAt: null,
      connectionInfoUpdatedAt: null,
      userUpdatedAt: null,
      retired: [],
      deleting: false,
      ...previous,
      error,
      matchedLabel,
    };
    const directory = secretDirectory(outputDir, claim.namespace, claim.secretName);
    try {
      await writeStatus(path, next, onStep);
    } catch (writeError) {
      return {
        claim: claim.key,
        result: 'error',
        actions,
        error: `${error}; status not written: ${errorMessage(writeError)}`,
        secretDirectory: directory,
      };
    }
    return {
      claim: claim.key,
      result: 'error',
      actions,
      error,
      secretDirectory: directory,
      ...(matchedLabel ? { matchedLabel } : {}),
    };
  }
}

/** Two claims may not manage the same users on one instance: later ones (by key) get an error. */
function findConflicts(
  claims: readonly DatabaseClaim[],
  desired: ReadonlyMap<string, Binding>,
): Map<string, string> {
  const owners = new Map<string, string>();
  const conflicts = new Map<string, string>();
  for (const claim of [...claims].sort((a, b) => a.key.localeCompare(b.key))) {
    const binding = desired.get(claim.key);
    if (!binding) continue;
    const key = UsageIndex.keys(binding)[1];
    const owner = owners.get(key);
    if (owner)
      conflicts.set(
        claim.key,
        `userName "${binding.userName}" on ${instanceId(binding)} is already managed by claim ${owner}`,
      );
    else owners.set(key, claim.key);
  }
  return conflicts;
}

function sameDatabaseLocation(a: Binding, b: Binding): boolean {
  return a.host === b.host && a.port === b.port && a.databaseName === b.databaseName;
}

function sameLocation(a: Binding, b: Binding): boolean {
  return sameDatabaseLocation(a, b) && a.userName === b.userName;
}

/** SQLSTATEs of a login refused for its credentials (invalid password / authorization). */
const CREDENTIAL_REJECTIONS = new Set(['28P01', '28000']);

function isCredentialRejection(code: string | undefined): boolean {
  return code !== undefined && CREDENTIAL_REJECTIONS.has(code);
}

/**
 * The message of an error the reconciler reports (outcome, status file, CLI, logs). The
 * reconciler never puts a password in its own messages, but an error from pg or the file
 * system may echo a connection string: `redactError` strips any URI password.
 */
function errorMessage(error: unknown): string {
  return redactError(error, []).message;
}

/** Runs `work` over `items` with at most `limit` in flight; results keep the input order. */
async function mapConcurrently<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/** How many outcomes ended in each result, for the claims-by-state metric. */
function countByResult(outcomes: readonly ClaimOutcome[]): Partial<Record<ClaimResult, number>> {
  const counts: Partial<Record<ClaimResult, number>> = {};
  for (const { result } of outcomes) counts[result] = (counts[result] ?? 0) + 1;
  return counts;
}
