/**
 * Controller test helpers: the FAKE API server serving DatabaseClaims, a KubeConfig for the
 * real client pointed at it, claim objects, and a controller wired to the folder adapter.
 */
import {
  type FakeChange,
  FakeKubeApiServer,
  type FakeResourceType,
  type KubeObject,
  nextEvent,
} from 'hotload-test-support';
import type { ReconcilerConfig } from '../../src/index.js';
import { ClaimController, type ClaimControllerOptions } from '../../src/kubernetes/claim-controller.js';
import { CLAIM_GROUP, CLAIM_PLURAL, CLAIM_VERSION } from '../../src/kubernetes/claim-resource.js';
import {
  KubeClaimReconciler,
  type KubeClaimReconcilerOptions,
} from '../../src/kubernetes/kube-claim-reconciler.js';
import { type KubeClients, kubeClientsForUrl } from '../../src/kubernetes/kube-clients.js';

/** DatabaseClaim as the fake serves it (status subresource, like the CRD in deploy/). */
export const CLAIM_TYPE: FakeResourceType = {
  group: CLAIM_GROUP,
  version: CLAIM_VERSION,
  plural: CLAIM_PLURAL,
  kind: 'DatabaseClaim',
  statusSubresource: true,
};

/** A fake API server that serves DatabaseClaims too. */
export function startFakeApi(): Promise<FakeKubeApiServer> {
  return FakeKubeApiServer.start([CLAIM_TYPE]);
}

/** Clients of the real `@kubernetes/client-node` talking to `fake`. */
export function clientsFor(fake: FakeKubeApiServer): KubeClients {
  return kubeClientsForUrl(fake.url);
}

/** A DatabaseClaim object. */
export function claimObject(name: string, spec: Record<string, unknown>, namespace = 'default'): KubeObject {
  return {
    apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
    kind: 'DatabaseClaim',
    metadata: { name, namespace },
    spec,
  };
}

/** A controller on `fake` and its reconciler; `stop()` both when done. */
export function makeController(
  fake: FakeKubeApiServer,
  reconcilerOptions: KubeClaimReconcilerOptions,
  options: Partial<ClaimControllerOptions> = {},
): {
  controller: ClaimController;
  reconciler: KubeClaimReconciler;
  clients: KubeClients;
  stop: () => Promise<void>;
} {
  const clients = clientsFor(fake);
  const reconciler = new KubeClaimReconciler(reconcilerOptions);
  const controller = new ClaimController({
    clients,
    reconciler,
    backoff: { baseMillis: 50, maxMillis: 1000 },
    watchRestartMillis: 50,
    ...options,
  });
  const stop = async () => {
    await controller.stop();
    await reconciler.close();
  };
  return { controller, reconciler, clients, stop };
}

/** Resolves with the next change of `fake` that `accept` takes. */
export function nextChange(
  fake: FakeKubeApiServer,
  accept: (change: FakeChange) => boolean,
): Promise<FakeChange> {
  return nextEvent<FakeChange>(fake, 'change', accept);
}

/** The next status write of claim `name` whose Ready condition is `status`. */
export function claimReady(
  fake: FakeKubeApiServer,
  name: string,
  status: 'True' | 'False' = 'True',
): Promise<FakeChange> {
  return nextChange(
    fake,
    (change) =>
      change.plural === CLAIM_PLURAL &&
      change.object.metadata.name === name &&
      readyStatus(change.object) === status,
  );
}

/** The `Ready` condition's status of a claim object. */
export function readyStatus(object: KubeObject | undefined): string | undefined {
  const conditions = (object?.status as { conditions?: Array<{ type: string; status: string }> } | undefined)
    ?.conditions;
  return conditions?.find((condition) => condition.type === 'Ready')?.status;
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
  fake: FakeKubeApiServer,
  namespace: string,
  name: string,
  spec: Record<string, unknown> = {},
): Promise<FakeChange> {
  const ready = claimReady(fake, name);
  const base = name.replaceAll('-', '_');
  fake.create(
    CLAIM_PLURAL,
    namespace,
    claimObject(name, { instanceLabel: 'atlas', userName: base, databaseName: base, ...spec }, namespace),
  );
  return ready;
}
