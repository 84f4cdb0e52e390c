/**
 * The DatabaseClaim controller: informer → work queue → one reconcile per claim key, the
 * controller-runtime way. Per key it: validates the claim; adds the finalizer before
 * touching anything; reconciles through the {@link ClaimReconcilePort} (which publishes the
 * Secret); writes status (state, conditions, observedGeneration); records an Event; and
 * requeues after the result's delay or with per-key backoff on a retryable error. A claim
 * being deleted is finalized (deletion policy) and its finalizer removed; when that fails
 * the finalizer stays and a condition says why.
 */
import { EventEmitter } from 'node:events';
import {
  type ClaimIdentity,
  type ClaimPorts,
  type ClaimReconcile,
  type ClaimReconcilePort,
  type ClaimStatus,
  DATA_KEPT,
} from 'hotload-claim-reconciler';
import type { HotloadLogger } from 'hotload-core';
import { type ClaimRef, readClaim } from './claim-api.js';
import type { ConditionInput } from './claim-conditions.js';
import { type ClaimEvent, ClaimEventRecorder, eventFor } from './claim-events.js';
import { addFinalizer, hasFinalizer, removeFinalizer } from './claim-finalizer.js';
import {
  type ClaimRecord,
  ClaimRecords,
  type ClaimRecordsLocation,
  recordOf,
  statusOf,
  type UnreadableRecord,
} from './claim-records.js';
import {
  ALLOW_DELETE_ANNOTATION,
  allowsDataDeletion,
  CLAIM_RESOURCE,
  type ClaimResource,
  claimFromResource,
  DEFAULT_PUBLISHER_ID,
  secretNameOf,
} from './claim-resource.js';
import { ClaimStatusIndex } from './claim-status-index.js';
import { stateFromStatus, statusFields, writeClaimStatus } from './claim-status-writer.js';
import { ControllerLoop } from './controller-loop.js';
import { describeApiError, type KubeClients } from './kube-clients.js';
import { KubeSecretSink } from './kube-secret-sink.js';
import { KubeStatusStore } from './kube-status-store.js';
import { type InformerChange, resourceKey } from './resource-informer.js';
import { SecretCache } from './secret-cache.js';
import { readSeedSourceDsn } from './seed-source-secret.js';
import type { BackoffSettings, WorkOutcome } from './work-queue.js';

/** Options of {@link ClaimController}. */
export interface ClaimControllerOptions {
  /** The API clients of the cluster to watch and write to. */
  readonly clients: KubeClients;
  /** What reconciles (and finalizes) one claim, a `ClaimReconciler`. */
  readonly reconciler: ClaimReconcilePort;
  /** Namespaces to watch; empty: all. */
  readonly namespaces?: readonly string[];
  /** Claims reconciled at the same time (never two of the same claim); default 4. */
  readonly workers?: number;
  /** Every claim is reconciled again this often; default 10 minutes. */
  readonly resyncMillis?: number;
  /** Per-claim backoff after a retryable error. */
  readonly backoff?: BackoffSettings;
  /** Delay before restarting a failed watch (doubles up to 30 s); default 500 ms. */
  readonly watchRestartMillis?: number;
  /** A pino-compatible logger for failed reconciles and watches (warn level). Default: silent. */
  readonly logger?: HotloadLogger;
  /** Clock for condition and Secret publish times. Default: `new Date()`. */
  readonly now?: () => Date;
  /**
   * Where to keep the second record of what each claim owns (`claim-records.ts`), so that
   * a claim whose finalizer was stripped, or that vanished while no controller ran, is
   * still cleaned up by its policy. Absent: no records (only the finalizer).
   */
  readonly records?: ClaimRecordsLocation;
  /**
   * Read the claims' Secrets from an informer cache (`secret-cache.ts`) instead of a GET per
   * reconcile; default true. Needs `list` and `watch` on Secrets.
   */
  readonly cacheSecrets?: boolean;
}

/** What one reconcile of a key did (emitted as `reconciled`, for tests and metrics). */
export interface KeyReconciled {
  /** The claim's `namespace/name`. */
  readonly key: string;
  /**
   * What happened: a `ClaimResult` (hotload-claim-reconciler), or `invalid` (the spec does not validate),
   * `finalized` (deleted and the finalizer removed), `gone` (the claim no longer exists).
   */
  readonly outcome: ClaimReconcile['outcome']['result'] | 'invalid' | 'finalized' | 'gone';
  /** The error message, when the reconcile failed. */
  readonly error?: string;
  /** How long the reconcile took, in seconds. */
  readonly seconds?: number;
}

/**
 * Events: `reconciled` ({@link KeyReconciled}) after every key; `watch-connect` and
 * `watch-error` from the informer.
 */
export class ClaimController extends EventEmitter {
  readonly #options: ClaimControllerOptions;
  readonly #loop: ControllerLoop<ClaimResource>;
  readonly #events: ClaimEventRecorder;
  readonly #records: ClaimRecords | undefined;
  readonly #secrets: SecretCache | undefined;
  readonly #statuses = new ClaimStatusIndex();
  readonly #started = new Map<string, number>();

  constructor(options: ClaimControllerOptions) {
    super();
    this.#options = options;
    this.#loop = new ControllerLoop<ClaimResource>(
      options.clients,
      CLAIM_RESOURCE,
      {
        namespaces: options.namespaces,
        workers: options.workers,
        resyncMillis: options.resyncMillis ?? 600_000,
        backoff: options.backoff,
        watchRestartMillis: options.watchRestartMillis,
      },
      (key, resource) => this.#reconcileKey(key, resource),
    );
    this.#loop.on('change', (change: InformerChange<ClaimResource>) => this.#statuses.apply(change));
    this.#loop.on('watch-connect', (namespace) => this.emit('watch-connect', namespace));
    this.#loop.on('watch-error', (message: string) => {
      options.logger?.warn({ error: message }, 'DatabaseClaim watch failed; restarting');
      this.emit('watch-error', message);
    });
    this.#records = options.records && new ClaimRecords(options.clients, options.records);
    this.#secrets =
      options.cacheSecrets === false
        ? undefined
        : new SecretCache(
            options.clients,
            options.namespaces,
            (message) => options.logger?.warn({ error: message }, 'Secret watch failed; restarting'),
            options.watchRestartMillis,
            (claimKey) => this.#loop.enqueue(claimKey),
          );
    this.#events = new ClaimEventRecorder(options.clients, (message) => options.logger?.warn({}, message));
  }

  /** Lists and watches claims and starts the workers; resolves once the first list is in. */
  async start(): Promise<void> {
    await this.#records?.load();
    // One hand-edited record must not stop every claim's rotation: it is left as it is and
    // said here (and in `dbclaim_unreadable_records`); see claim-records.ts.
    for (const { configMap, problem } of this.unreadableRecords)
      this.#options.logger?.warn(
        { configMap, error: problem },
        `${problem}; left as it is: a vanished claim it records is not cleaned up until it is mended`,
      );
    await this.#secrets?.start();
    await this.#loop.start();
    // Claims recorded but gone (deleted while no controller ran, or without the finalizer):
    // each is cleaned up by its record, in the queue like any claim.
    // Only in the namespaces this controller watches: a claim elsewhere is not in its cache
    // because it is not watched, not because it is gone.
    const watched = new Set(this.#options.namespaces ?? []);
    for (const key of this.#records?.keys() ?? []) {
      const namespace = key.slice(0, key.indexOf('/'));
      if ((watched.size === 0 || watched.has(namespace)) && !this.#loop.get(key)) this.#loop.enqueue(key);
    }
  }

  /** Stops watching, lets reconciles in process finish. */
  async stop(): Promise<void> {
    await this.#loop.stop();
    await this.#secrets?.stop();
  }

  /** Whether the informer has listed (for `/readyz`). */
  get started(): boolean {
    return this.#loop.started;
  }

  /**
   * The claim records that did not parse when they were listed (ConfigMap and problem), less
   * those a claim has written over since; empty without records.
   */
  get unreadableRecords(): readonly UnreadableRecord[] {
    return this.#records?.unreadable() ?? [];
  }

  /** Keys waiting or being reconciled (client-go's work-queue depth, for metrics). */
  get queueDepth(): number {
    return this.#loop.queueDepth;
  }

  /** Every claim the informer holds (for gauges over all claims; read-only). */
  claims(): readonly ClaimResource[] {
    return this.#loop.list();
  }

  /** Reconciles every known claim again soon (e.g. after the config changed). */
  enqueueAll(): void {
    this.#loop.enqueueAll();
  }

  async #reconcileKey(key: string, resource: ClaimResource | undefined): Promise<WorkOutcome> {
    // A key is never reconciled twice at once (the work queue), so one start per key.
    this.#started.set(key, performance.now());
    if (!resource) {
      const record = this.#records?.get(key);
      if (record) return this.#cleanUpVanished(key, record);
      this.#report({ key, outcome: 'gone' });
      return { kind: 'done' };
    }
    try {
      return await this.#reconcileResource(key, resource);
    } catch (error) {
      const message = describeApiError(error);
      this.#options.logger?.warn({ claim: key, error: message }, `claim ${key}: reconcile failed`);
      this.#report({ key, outcome: 'error', error: message });
      return { kind: 'failed' };
    }
  }

  async #reconcileResource(key: string, resource: ClaimResource): Promise<WorkOutcome> {
    const ref: ClaimRef = {
      namespace: resource.metadata.namespace,
      name: resource.metadata.name,
      uid: resource.metadata.uid,
    };
    const generation = resource.metadata.generation ?? 1;
    const parsed = claimFromResource(resource);
    if (resource.metadata.deletionTimestamp !== undefined) {
      // Deletion needs only the claim's identity: the recorded state says what to clean up,
      // so a claim edited into an invalid spec is still cleaned up by its policy.
      const identity = {
        key,
        namespace: ref.namespace,
        secretName: parsed.claim?.secretName ?? secretNameOf(resource),
      };
      return this.#finalize(key, ref, identity, resource, generation);
    }
    if (parsed.error !== undefined) {
      await this.#writeStatus(
        ref,
        {},
        { result: { invalid: parsed.error }, generation, published: false },
        resource,
      );
      await this.#event(ref, { type: 'Warning', reason: 'InvalidSpec', message: parsed.error });
      return this.#done({ key, outcome: 'invalid', error: parsed.error });
    }
    const claim = parsed.claim;
    const own = stateFromStatus(resource, key, claim.secretName);
    // The finalizer must be on the claim before anything is changed. A reconciler that
    // waits for it at its first change gets it written beside its connect, lock and reads
    // (one API round trip off a new claim's path); any other has it written first.
    const finalizing = this.#finalizerAdded(ref, resource);
    const waits = this.#options.reconciler.awaitsBeforeFirstChange === true;
    if (!waits && !(await finalizing)) return this.#done({ key, outcome: 'gone' });
    const beforeFirstChange = async () => {
      if (!(await finalizing)) throw new Error(`claim ${key} is gone or being deleted; nothing was changed`);
    };
    // Nothing published yet: the Secret cache's "absent" is believed (no 404 GET for a new
    // claim). Not when finalizing: a Secret missed there would be left behind.
    const { ports, store } = this.#ports(
      claim,
      ref,
      own,
      own === undefined || ownsNothing(own),
      beforeFirstChange,
    );
    const result = await this.#options.reconciler.reconcile(claim, ports);
    // The freshest copy of the claim (the status write starts from it without a GET); a
    // failed finalizer write fails the reconcile here, as it did before it.
    const latest = await finalizing;
    if (!latest) return this.#done({ key, outcome: 'gone' });
    const recorded = store.recorded;
    const state = recorded?.kind === 'written' ? recorded.status : own;
    const published = (state?.activeUser ?? null) !== null;
    const record = recordOf(ref.uid, state, allowsDataDeletion(resource));
    const { outcome, error } = result;
    const event = eventFor(outcome.result, outcome.actions, error?.message);
    // The record is a ConfigMap of its own (claim-records.ts) and the Event is best effort
    // (it never fails a reconcile, and tells what the reconcile did in the database, which
    // stands whether or not the status write lands): all three are written at once, not one
    // after the other: the Event adds no round trip to a claim. A failed status or record
    // write fails the reconcile (retried with backoff) once all are done.
    const written = await Promise.allSettled([
      this.#writeStatus(ref, recorded ? statusFields(state) : {}, { result, generation, published }, latest),
      record && this.#records?.put(key, record),
      event && this.#event(ref, event),
    ]);
    for (const write of written) if (write.status === 'rejected') throw write.reason;
    this.#report({ key, outcome: outcome.result, error: error?.message });
    if (error?.kind === 'retryable') return { kind: 'failed' };
    return { kind: 'done', requeueAfterMillis: error ? undefined : result.requeueAfterMillis };
  }

  async #finalize(
    key: string,
    ref: ClaimRef,
    claim: ClaimIdentity,
    resource: ClaimResource,
    generation: number,
  ): Promise<WorkOutcome> {
    if (!hasFinalizer(resource)) return this.#done({ key, outcome: 'gone' });
    // The claim as stored now, not as cached: a reconcile that ran while the claim was being
    // deleted may have recorded the database in its status a moment ago, and the informer
    // may not have that update yet. Finalizing from the cache would find nothing recorded
    // and leave the database and roles behind. One GET per deletion.
    const current = await readClaim(this.#options.clients, ref);
    if (!current || !hasFinalizer(current)) return this.#done({ key, outcome: 'gone' });
    const { ports, store } = this.#ports(claim, ref, stateFromStatus(current, key, claim.secretName));
    const result = await this.#options.reconciler.finalize(
      claim,
      ports,
      allowsDataDeletion(resource)
        ? {}
        : { keepDataBecause: `the claim has no annotation ${ALLOW_DELETE_ANNOTATION}: "true"` },
    );
    if (result.error) {
      const recorded = store.recorded;
      await this.#writeStatus(ref, recorded?.kind === 'written' ? statusFields(recorded.status) : {}, {
        result: { deleting: result },
        generation,
        published: false,
      });
      await this.#event(ref, { type: 'Warning', reason: 'DeletionBlocked', message: result.error.message });
      this.#report({ key, outcome: result.outcome.result, error: result.error.message });
      return { kind: 'failed' };
    }
    await this.#event(ref, eventFor('deleted', result.outcome.actions, undefined)!);
    const kept = result.outcome.actions.filter((action) => action.startsWith(DATA_KEPT));
    if (kept.length > 0) {
      // Said where `kubectl describe` shows it: the data is still there, on purpose.
      await this.#event(ref, {
        type: 'Warning',
        reason: 'DataKept',
        message: `${kept.join('; ')}; to drop it, delete a claim annotated ${ALLOW_DELETE_ANNOTATION}: "true"`,
      });
    }
    await this.#records?.remove(key);
    await removeFinalizer(this.#options.clients, ref);
    return this.#done({ key, outcome: 'finalized' });
  }

  /**
   * A claim that is gone without its finalizer having run, cleaned up by its record: the
   * deletion policy as the finalizer would have applied it (data dropped only if the claim
   * allowed it), then the record removed. There is no object left to put an Event on: the
   * outcome is logged.
   */
  async #cleanUpVanished(key: string, record: ClaimRecord): Promise<WorkOutcome> {
    const status = statusOf(key, record);
    const identity = { key, namespace: status.namespace, secretName: record.secretName };
    const ref = { namespace: status.namespace, name: key.slice(key.indexOf('/') + 1), uid: record.uid };
    const { ports } = this.#ports(identity, ref, status);
    const result = await this.#options.reconciler.finalize(
      identity,
      ports,
      record.allowDataDeletion
        ? {}
        : {
            keepDataBecause: `the claim vanished without its finalizer, and had no annotation ${ALLOW_DELETE_ANNOTATION}: "true"`,
          },
    );
    const { outcome, error } = result;
    this.#options.logger?.warn(
      { claim: key, result: outcome.result, actions: outcome.actions, error: error?.message },
      `claim ${key}: gone without its finalizer; cleaned up by the controller's record`,
    );
    if (error) {
      this.#report({ key, outcome: outcome.result, error: error.message });
      return { kind: 'failed' };
    }
    await this.#records?.remove(key);
    return this.#done({ key, outcome: 'finalized' });
  }

  /**
   * The claim with the finalizer on it (written when missing; started now, awaited by the
   * caller), or undefined when it is gone or being deleted.
   */
  #finalizerAdded(ref: ClaimRef, resource: ClaimResource): Promise<ClaimResource | undefined> {
    if (hasFinalizer(resource)) return Promise.resolve(resource);
    const adding = addFinalizer(this.#options.clients, ref, resource);
    // Awaited later (after the reconcile): not an unhandled rejection meanwhile.
    adding.catch(() => {});
    return adding;
  }

  /** The cluster side of one claim's reconcile: its Secret, and every claim's recorded state. */
  #ports(
    claim: ClaimIdentity,
    owner: ClaimRef,
    own: ClaimStatus | undefined,
    newClaim = false,
    beforeFirstChange?: () => Promise<void>,
  ): { ports: ClaimPorts; store: KubeStatusStore } {
    // The claim's own state as the caller read it (fresh, or from its record); every other
    // claim's as the informer last saw it.
    const store = new KubeStatusStore(this.#statuses, claim.key, own);
    const ports: ClaimPorts = {
      secretFor: (namespace, secretName) =>
        new KubeSecretSink(
          this.#options.clients,
          { ...owner, namespace, secretName },
          this.#options.now,
          this.#secrets,
          newClaim,
        ),
      statuses: store,
      publisherId: async () => this.#options.reconciler.publisherId ?? DEFAULT_PUBLISHER_ID,
      sourceDsn: (namespace, name) => readSeedSourceDsn(this.#options.clients, namespace, name),
      // Only the few claims naming the same user are parsed (a full parse of every claim on
      // every reconcile would make a pass quadratic in parses).
      otherClaims: (userName) =>
        this.#loop.list().flatMap((other) => {
          if (other.spec?.userName !== userName || resourceKey(other.metadata) === claim.key) return [];
          if (other.metadata.deletionTimestamp !== undefined) return [];
          const parsed = claimFromResource(other);
          return parsed.claim ? [parsed.claim] : [];
        }),
      ...(beforeFirstChange ? { beforeFirstChange } : {}),
    };
    return { ports, store };
  }

  async #writeStatus(
    ref: ClaimRef,
    fields: Parameters<typeof writeClaimStatus>[2],
    input: Omit<ConditionInput, 'now'>,
    cached?: ClaimResource,
  ) {
    const now = this.#options.now?.() ?? new Date();
    await writeClaimStatus(this.#options.clients, ref, fields, { ...input, now }, cached);
  }

  async #event(ref: ClaimRef, event: ClaimEvent): Promise<void> {
    await this.#events.record(ref, event);
  }

  #done(reconciled: KeyReconciled): WorkOutcome {
    this.#report(reconciled);
    return { kind: 'done' };
  }

  #report(reconciled: KeyReconciled): void {
    const started = this.#started.get(reconciled.key);
    this.#started.delete(reconciled.key);
    const seconds = started === undefined ? undefined : (performance.now() - started) / 1000;
    this.emit('reconciled', { ...reconciled, ...(seconds !== undefined ? { seconds } : {}) });
  }
}

/** A recorded state with nothing published or bound yet. */
function ownsNothing(state: ClaimStatus): boolean {
  return state.binding === null && state.activeUser === null && state.retired.length === 0;
}
