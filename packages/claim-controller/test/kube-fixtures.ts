/**
 * Controller test helpers on the REAL control plane (kube-apiserver + etcd, and
 * kube-controller-manager's garbage collector; see `hotload-test-support`'s kube test bed):
 * claim objects, a controller running under the ServiceAccount that `deploy/02-rbac.yaml`
 * binds, and waits for the changes a test means.
 */

import {
  ClaimReconciler,
  type ClaimReconcilerOptions,
  type ReconcilerConfig,
} from 'hotload-claim-reconciler';
import {
  CONTROLLER_SERVICE_ACCOUNT,
  type EventSource,
  type KubeChange,
  type KubeObject,
  type KubeObjects,
  type KubeTestBed,
  type NextEventOptions,
  nextEvent,
} from 'hotload-test-support';
import { ClaimController, type ClaimControllerOptions } from '../src/claim-controller.js';
import { DEFAULT_RECORDS_NAME, RECORDS_LABEL } from '../src/claim-records.js';
import {
  ALLOW_DELETE_ANNOTATION,
  CLAIM_GROUP,
  CLAIM_PLURAL,
  CLAIM_VERSION,
  DEFAULT_PUBLISHER_ID,
} from '../src/claim-resource.js';
import { type KubeClients, kubeClients } from '../src/kube-clients.js';

/** Anything that emits `change` ({@link KubeChange}): {@link KubeObjects}, or the fake. */
export type ChangeFeed = EventSource<KubeChange>;

/** The annotation that lets a `Delete` policy drop data (the controller's deletion guard). */
export const ALLOW_DELETE = { [ALLOW_DELETE_ANNOTATION]: 'true' } as const;

/** A DatabaseClaim object. */
export function claimObject(
  name: string,
  spec: Record<string, unknown>,
  namespace = 'default',
  annotations?: Record<string, string>,
): KubeObject {
  return {
    apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
    kind: 'DatabaseClaim',
    metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
    spec,
  };
}

/** A controller and its reconciler; `stop()` both when done. */
export interface RunningController {
  readonly controller: ClaimController;
  readonly reconciler: ClaimReconciler;
  readonly clients: KubeClients;
  stop(): Promise<void>;
}

/**
 * A controller on `bed`, authenticated as the controller's ServiceAccount (through
 * `server`, e.g. a fault proxy, when given).
 */
export async function makeController(
  bed: KubeTestBed,
  reconcilerOptions: ClaimReconcilerOptions,
  options: Partial<ClaimControllerOptions> & { server?: string } = {},
): Promise<RunningController> {
  const { server, ...controllerOptions } = options;
  const clients = kubeClients(await bed.controllerConfig(server));
  const reconciler = new ClaimReconciler({ publisherId: DEFAULT_PUBLISHER_ID, ...reconcilerOptions });
  const controller = new ClaimController({
    clients,
    reconciler,
    backoff: { baseMillis: 50, maxMillis: 1000 },
    watchRestartMillis: 50,
    records: { namespace: CONTROLLER_SERVICE_ACCOUNT.namespace },
    ...controllerOptions,
  });
  const stop = async () => {
    await controller.stop();
    await reconciler.close();
  };
  return { controller, reconciler, clients, stop };
}

/** Resolves with the next change `feed` sees that `accept` takes. */
export function nextChange(
  feed: ChangeFeed,
  accept: (change: KubeChange) => boolean,
  options?: NextEventOptions,
): Promise<KubeChange> {
  return nextEvent<KubeChange>(feed, 'change', accept, options);
}

/** The next change of claim `name` whose Ready condition is `status`. */
export function claimReady(
  feed: ChangeFeed,
  name: string,
  status: 'True' | 'False' = 'True',
  options?: NextEventOptions,
): Promise<KubeChange> {
  return nextChange(
    feed,
    (change) =>
      change.plural === CLAIM_PLURAL &&
      change.type !== 'DELETED' &&
      change.object.metadata.name === name &&
      readyStatus(change.object) === status,
    options,
  );
}

/** The next deletion (gone for good) of an object of `plural` named `name`. */
export function deletion(feed: ChangeFeed, plural: string, name: string): Promise<KubeChange> {
  return nextChange(
    feed,
    (c) => c.plural === plural && c.type === 'DELETED' && c.object.metadata.name === name,
  );
}

/** The `Ready` condition's status of a claim object. */
export function readyStatus(object: KubeObject | undefined): string | undefined {
  const conditions = (object?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)
    ?.conditions;
  return conditions?.find((condition) => condition.type === 'Ready')?.status;
}

/** The `Synced` condition of a claim object. */
export function syncedCondition(
  object: KubeObject | undefined,
): { reason: string; message: string; status: string } | undefined {
  const conditions = (object?.status as { conditions?: Array<{ type: string }> } | undefined)?.conditions;
  return conditions?.find((condition) => condition.type === 'Synced') as
    | { reason: string; message: string; status: string }
    | undefined;
}

/** Decoded data of a Secret object. */
export function secretData(secret: KubeObject | undefined): Record<string, string> {
  const data = (secret?.data ?? {}) as Record<string, string>;
  return Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
}

export type { ReconcilerConfig };

/**
 * Creates claim `namespace/name` (label `atlas`, user and database named after it, plus
 * `spec`) and resolves with its first Ready status.
 */
export async function createReadyClaim(
  objects: KubeObjects,
  namespace: string,
  name: string,
  spec: Record<string, unknown> = {},
  annotations?: Record<string, string>,
  options?: NextEventOptions,
): Promise<KubeChange> {
  const ready = claimReady(objects, name, 'True', options);
  const base = name.replaceAll('-', '_');
  await objects.create(
    CLAIM_PLURAL,
    namespace,
    claimObject(
      name,
      { instanceLabel: 'atlas', userName: base, databaseName: base, ...spec },
      namespace,
      annotations,
    ),
  );
  return ready;
}

/**
 * The controller's record of claim `key` (`namespace/name`), as stored: its ConfigMap's
 * fields (`claim`, `record`) parsed; undefined when none (`claim-records.ts`).
 */
export async function storedRecord(
  objects: KubeObjects,
  key: string,
): Promise<{ name: string; record: Record<string, unknown> } | undefined> {
  const maps = await objects.list('configmaps', CONTROLLER_SERVICE_ACCOUNT.namespace);
  const found = maps.find(
    (map) =>
      map.metadata.labels?.[RECORDS_LABEL] === DEFAULT_RECORDS_NAME &&
      (map.data as Record<string, string> | undefined)?.claim === key,
  );
  if (!found) return undefined;
  const data = found.data as Record<string, string>;
  return { name: found.metadata.name, record: JSON.parse(data.record ?? '{}') };
}

/** The Events recorded for object `name`, oldest first. */
export async function eventsFor(
  objects: KubeObjects,
  namespace: string,
  name: string,
): Promise<KubeObject[]> {
  return (await objects.list('events', namespace)).filter(
    (event) => (event.involvedObject as { name: string }).name === name,
  );
}
