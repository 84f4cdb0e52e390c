/**
 * Leader election on a `coordination.k8s.io/v1` Lease, with client-go's rules: a candidate
 * takes the Lease when it is free or when its record has not changed for a whole lease
 * duration *as observed on the candidate's own clock* (so clock skew between nodes does not
 * matter); the leader renews every retry period and steps down when it has not renewed for
 * `renewDeadlineMillis`; on a clean shutdown it releases the Lease so a successor need not
 * wait. Writes carry the resourceVersion: two candidates never both win (409 Conflict).
 */
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { describeApiError, isConflict, isNotFound, type KubeClients } from './kube-clients.js';

/** Options of {@link LeaderElector}. */
export interface LeaderElectionOptions {
  /** The namespace of the Lease. */
  readonly namespace: string;
  /** The name of the Lease the replicas compete for. */
  readonly leaseName: string;
  /** This replica's identity (the pod name). */
  readonly identity: string;
  /** How long a Lease stays taken without renewal; default 15 s. */
  readonly leaseDurationSeconds?: number;
  /** The leader steps down when it could not renew for this long; default 10 s. */
  readonly renewDeadlineMillis?: number;
  /** Interval between attempts to acquire or renew; default 2 s. */
  readonly retryPeriodMillis?: number;
}

/**
 * A Lease time (`acquireTime`, `renewTime`: `metav1.MicroTime`). kube-apiserver parses
 * MicroTime with exactly six fractional digits and refuses a Lease with a plain `Date`'s
 * three (`parsing time ... as "2006-01-02T15:04:05.000000Z07:00"`), so every time written,
 * including one read back and written again, goes through this.
 */
export function leaseTime(time: Date | string | number): V1MicroTime {
  return new V1MicroTime(typeof time === 'string' ? Date.parse(time) : time);
}

/**
 * Events: `started-leading`, `stopped-leading`, `error` (a short message: the API status
 * and its reason, never the HTTP response).
 */
export class LeaderElector extends EventEmitter {
  readonly #clients: KubeClients;
  readonly #options: Required<LeaderElectionOptions>;
  #observed: { resourceVersion: string | undefined; at: number } | undefined;
  #leading = false;
  #stopped = false;
  #loop: Promise<void> | undefined;
  readonly #abort = new AbortController();

  constructor(clients: KubeClients, options: LeaderElectionOptions) {
    super();
    this.#clients = clients;
    this.#options = {
      leaseDurationSeconds: 15,
      renewDeadlineMillis: 10_000,
      retryPeriodMillis: 2_000,
      ...options,
    };
  }

  /** Whether this replica holds the Lease. */
  get leading(): boolean {
    return this.#leading;
  }

  /** Starts campaigning (in the background). */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops campaigning; releases the Lease when `release` and leading (a clean shutdown). */
  async stop(release = true): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    await this.#loop;
    if (release && this.#leading) await this.#release().catch(() => {});
    this.#setLeading(false);
  }

  async #run(): Promise<void> {
    let lastRenew = 0;
    while (!this.#stopped) {
      let renewed = false;
      try {
        renewed = await this.#tryAcquireOrRenew();
      } catch (error) {
        this.emit('error', describeApiError(error));
      }
      const now = Date.now();
      if (renewed) {
        lastRenew = now;
        this.#setLeading(true);
      } else if (this.#leading && now - lastRenew >= this.#options.renewDeadlineMillis) {
        this.#setLeading(false);
      } else if (this.#leading && !renewed && this.#observedOther) {
        // Someone else holds the Lease now: step down at once.
        this.#setLeading(false);
      }
      await sleep(this.#options.retryPeriodMillis, undefined, { signal: this.#abort.signal }).catch(() => {});
    }
  }

  #observedOther = false;

  async #tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, leaseName: name, identity, leaseDurationSeconds } = this.#options;
    const now = leaseTime(Date.now());
    let lease: V1Lease;
    try {
      lease = await this.#clients.coordination.readNamespacedLease({ name, namespace });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      return this.#write(() =>
        this.#clients.coordination.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: {
              holderIdentity: identity,
              leaseDurationSeconds,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: 0,
            },
          },
        }),
      );
    }
    const resourceVersion = lease.metadata?.resourceVersion;
    const observed =
      this.#observed !== undefined && this.#observed.resourceVersion === resourceVersion
        ? this.#observed
        : { resourceVersion, at: Date.now() };
    this.#observed = observed;
    const holder = lease.spec?.holderIdentity ?? '';
    const duration = (lease.spec?.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
    const expired = Date.now() - observed.at >= duration;
    this.#observedOther = holder !== '' && holder !== identity;
    if (this.#observedOther && !expired) return false;
    const transition = holder !== identity;
    const acquired = lease.spec?.acquireTime;
    const spec = {
      ...lease.spec,
      holderIdentity: identity,
      leaseDurationSeconds,
      renewTime: now,
      // The client reads MicroTime back as a Date (three digits): re-wrap it.
      ...(acquired !== undefined ? { acquireTime: leaseTime(acquired) } : {}),
      ...(transition ? { acquireTime: now, leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1 } : {}),
    };
    return this.#write(() =>
      this.#clients.coordination.replaceNamespacedLease({ name, namespace, body: { ...lease, spec } }),
    );
  }

  /** A Lease write; false when another candidate wrote first (409). */
  async #write(write: () => Promise<V1Lease>): Promise<boolean> {
    try {
      const written = await write();
      this.#observed = { resourceVersion: written.metadata?.resourceVersion, at: Date.now() };
      this.#observedOther = false;
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }

  async #release(): Promise<void> {
    const { namespace, leaseName: name, identity } = this.#options;
    const lease = await this.#clients.coordination.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== identity) return;
    await this.#clients.coordination.replaceNamespacedLease({
      name,
      namespace,
      body: {
        ...lease,
        spec: {
          ...lease.spec,
          ...(lease.spec.acquireTime !== undefined ? { acquireTime: leaseTime(lease.spec.acquireTime) } : {}),
          ...(lease.spec.renewTime !== undefined ? { renewTime: leaseTime(lease.spec.renewTime) } : {}),
          holderIdentity: undefined,
          leaseDurationSeconds: 1,
        },
      },
    });
  }

  #setLeading(leading: boolean): void {
    if (leading === this.#leading) return;
    this.#leading = leading;
    this.emit(leading ? 'started-leading' : 'stopped-leading');
  }
}
