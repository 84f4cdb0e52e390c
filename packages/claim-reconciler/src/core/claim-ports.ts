/**
 * The two places a claim's reconcile writes outside PostgreSQL, as narrow ports each
 * driver fills: the folder mode (`folder/`) with a kubelet-style secret folder and a status
 * file, the Kubernetes controller (hotload-claim-controller) with a Secret and the claim's
 * status subresource.
 */

import type { DatabaseClaim } from './claim-schema.js';
import type { ClaimStatus } from './claim-status.js';
import type { PublishedCredentials } from './secret-layout.js';
import type { StepHook } from './steps.js';

/** Where one claim's secret is published (a folder, a Kubernetes Secret). */
export interface SecretSink {
  /** Where the secret lives, for messages and outcomes (a folder path, `namespace/name`). */
  readonly location: string;
  /** What the secret holds now, or undefined when there is none or it is incomplete. */
  read(): Promise<PublishedCredentials | undefined>;
  /** When the current content was published, or undefined. */
  publishedAt(): Promise<Date | undefined>;
  /** Whether publishing `credentials` with `dsnName` would change anything. */
  differs(credentials: PublishedCredentials, dsnName: string): Promise<boolean>;
  /**
   * Publishes atomically (a reader sees the old or the new secret, never a mix); the
   * sink's own inner steps, if any, are announced to `onStep` first.
   */
  publish(
    credentials: PublishedCredentials,
    dsnName: string,
    onStep?: (action: string) => Promise<void>,
  ): Promise<boolean>;
  /** Leftovers of a publish that was killed midway (names), empty when none. */
  stale(): Promise<string[]>;
  /** Removes those leftovers. */
  sweep(): Promise<void>;
  /** Removes the secret. */
  remove(): Promise<void>;
  /**
   * Runs `work` as the only writer of this secret (a lock file beside a folder; a
   * Kubernetes writer may rely on resourceVersion instead and just run it).
   */
  lock<T>(work: () => Promise<T>): Promise<T>;
}

/** Where claim statuses are kept (status files beside the secret folders, claims' status subresources). */
export interface StatusStore {
  /** The status of the secret `namespace/secretName`, or undefined. */
  read(namespace: string, secretName: string): Promise<ClaimStatus | undefined>;
  /** Writes `status` unless it is already exactly that; resolves whether it changed. */
  write(status: ClaimStatus, step: StepHook | undefined): Promise<boolean>;
  /** Removes the status (the last step of a deletion). */
  remove(status: ClaimStatus, step: StepHook | undefined): Promise<void>;
  /** Every stored status (claims still present and claims gone). */
  list(): Promise<ClaimStatus[]>;
}

/** The ports of one driver: a secret sink per claim secret, and the status store. */
export interface ClaimPorts {
  /** The sink of the secret `namespace/secretName`. */
  secretFor(namespace: string, secretName: string): SecretSink;
  /** Where every claim's status is kept. */
  readonly statuses: StatusStore;
  /**
   * Who publishes (an output folder's id; the controller's fixed id). Recorded on
   * each claim's base role: a claim already published by another publisher is refused.
   * Resolved once per pass; creating it is a step (a dry run skips it).
   */
  publisherId(step: StepHook | undefined): Promise<string>;
  /**
   * The driver's other valid claims whose `spec.userName` is `userName` (a controller's
   * informer knows them), for the user-conflict rule. Absent: the driver decides conflicts
   * itself (the folder mode sees a whole pass).
   */
  otherClaims?(userName: string): readonly DatabaseClaim[];
  /**
   * The DSN a seed source Secret holds (`uri_dsn.txt`, else `dsn.txt`), or undefined when
   * the Secret or both keys are missing. Absent: the driver reads no Secrets (folder mode
   * names a seed's DSN with a file instead).
   */
  sourceDsn?(namespace: string, name: string): Promise<string | undefined>;
  /**
   * What must be in place before the reconcile changes anything, though not before it
   * reads: awaited once, at the first state-changing step (the first step announced), by a reconciler whose {@link ClaimReconcilePort.awaitsBeforeFirstChange}
   * is true. The controller's finalizer is written meanwhile, beside the reconcile's
   * connect, lock and reads. A rejection aborts the claim before that step, as a throwing
   * step hook does.
   */
  beforeFirstChange?(): Promise<void>;
}
