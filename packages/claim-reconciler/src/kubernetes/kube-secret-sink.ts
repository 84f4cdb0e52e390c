/**
 * The claim's credentials as a Kubernetes Secret: `type: Opaque`, the folder mode's keys,
 * in the claim's namespace under `secretName`, owned by the claim (so deleting the claim
 * garbage-collects it), updated in place so the kubelet swaps the mounted files. The data
 * never reaches a log, an event or an error message.
 */
import type { V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import { CLAIM_GROUP, CLAIM_VERSION } from './claim-resource.js';
import { isNotFound, type KubeClients, retryOnConflict } from './kube-clients.js';
import type { SecretData, SecretSink } from './reconcile-port.js';

/** Label on every Secret the controller writes. */
export const MANAGED_BY_LABEL = { 'app.kubernetes.io/managed-by': 'hotload-claim-reconciler' } as const;

/** The claim a Secret belongs to. */
export interface SecretOwner {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly secretName: string;
}

/** A Secret named by a claim that belongs to someone else: never overwritten. */
export class SecretOwnershipError extends Error {
  override readonly name = 'SecretOwnershipError';
}

/** {@link SecretSink} on the Kubernetes API. */
export class KubeSecretSink implements SecretSink {
  readonly #clients: KubeClients;
  readonly #owner: SecretOwner;

  constructor(clients: KubeClients, owner: SecretOwner) {
    this.#clients = clients;
    this.#owner = owner;
  }

  async read(): Promise<SecretData | undefined> {
    const secret = await this.#get();
    if (!secret || !this.#owns(secret)) return undefined;
    return decode(secret.data ?? {});
  }

  async publish(data: SecretData): Promise<boolean> {
    return retryOnConflict(async () => {
      const current = await this.#get();
      if (!current) {
        await this.#clients.core.createNamespacedSecret({
          namespace: this.#owner.namespace,
          body: this.#desired(data),
        });
        return true;
      }
      if (!this.#owns(current))
        throw new SecretOwnershipError(
          `Secret ${this.#owner.namespace}/${this.#owner.secretName} exists and is not owned by DatabaseClaim ${this.#owner.name}; it is left untouched`,
        );
      if (sameData(decode(current.data ?? {}), data) && current.type === 'Opaque') return false;
      const body: V1Secret = {
        ...current,
        type: 'Opaque',
        data: encode(data),
        metadata: { ...current.metadata, labels: { ...current.metadata?.labels, ...MANAGED_BY_LABEL } },
      };
      delete body.stringData;
      await this.#clients.core.replaceNamespacedSecret({
        name: this.#owner.secretName,
        namespace: this.#owner.namespace,
        body,
      });
      return true;
    });
  }

  async remove(): Promise<void> {
    const current = await this.#get();
    if (!current || !this.#owns(current)) return;
    try {
      await this.#clients.core.deleteNamespacedSecret({
        name: this.#owner.secretName,
        namespace: this.#owner.namespace,
      });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  async #get(): Promise<V1Secret | undefined> {
    try {
      return await this.#clients.core.readNamespacedSecret({
        name: this.#owner.secretName,
        namespace: this.#owner.namespace,
      });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  #owns(secret: V1Secret): boolean {
    return (secret.metadata?.ownerReferences ?? []).some(
      (reference) => reference.uid === this.#owner.uid && reference.controller === true,
    );
  }

  #desired(data: SecretData): V1Secret {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: this.#owner.secretName,
        namespace: this.#owner.namespace,
        labels: { ...MANAGED_BY_LABEL },
        ownerReferences: [ownerReference(this.#owner)],
      },
      data: encode(data),
    };
  }
}

/** The controller reference to a claim (`controller: true`, blocks the owner's deletion). */
export function ownerReference(owner: SecretOwner): V1OwnerReference {
  return {
    apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
    kind: 'DatabaseClaim',
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

function encode(data: SecretData): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]));
}

function decode(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
  );
}

function sameData(a: SecretData, b: SecretData): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}
