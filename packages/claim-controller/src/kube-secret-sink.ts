/**
 * The claim's credentials as a Kubernetes Secret: `type: Opaque`, the folder mode's keys,
 * in the claim's namespace under `secretName`, owned by the claim (so deleting the claim
 * garbage-collects it), updated in place so the kubelet swaps the mounted files. The data
 * never reaches a log, an event or an error message. The annotation
 * {@link PUBLISHED_AT_ANNOTATION} records when it was published (a folder's `..data` mtime).
 */
import type { V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import {
  credentialsFromSecret,
  type PublishedCredentials,
  type SecretSink,
  secretDiffers,
  secretFiles,
} from 'hotload-claim-reconciler';
import { CLAIM_GROUP, CLAIM_VERSION } from './claim-resource.js';
import { isNotFound, type KubeClients, retryOnConflict } from './kube-clients.js';

import { MANAGED_BY_LABEL } from './managed-by.js';
import type { SecretCache } from './secret-cache.js';

export { MANAGED_BY_LABEL };

/** The claim a Secret belongs to. */
export interface SecretOwner {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly secretName: string;
}

/** A Secret named by a claim that belongs to someone else: never overwritten. */
export class SecretOwnershipError extends Error {
  /** Always `SecretOwnershipError`. */
  override readonly name = 'SecretOwnershipError';
}

/** Annotation with the time the credentials were last published (the rotation clock). */
export const PUBLISHED_AT_ANNOTATION = 'hotload-claim-reconciler/published-at';

/** A `SecretSink` (hotload-claim-reconciler's port) on the Kubernetes API: the claim's Secret. */
export class KubeSecretSink implements SecretSink {
  readonly #clients: KubeClients;
  readonly #owner: SecretOwner;
  readonly #now: () => Date;
  /** What this sink last read or wrote (`secret: undefined`: there is none); unset: unread. */
  #known: { readonly secret: V1Secret | undefined } | undefined;

  readonly #newClaim: boolean;

  /**
   * @param cache - the controller's Secret cache: reads come from it when it can be
   *   trusted, and writes are told to it
   * @param newClaim - the claim has published nothing yet (its status holds no binding):
   *   a Secret the cache does not hold is taken as absent without a GET (a new claim's 404).
   *   Safe because a new claim gets new credentials either way; a create that meets a
   *   Secret after all (409: the cache lagged, or an unlabelled Secret it never holds)
   *   reads it from the API and goes on as with any existing Secret. Default false.
   */
  constructor(
    clients: KubeClients,
    owner: SecretOwner,
    now: () => Date = () => new Date(),
    private readonly cache?: SecretCache,
    newClaim = false,
  ) {
    this.#clients = clients;
    this.#owner = owner;
    this.#now = now;
    this.#newClaim = newClaim;
  }

  /** `Secret <namespace>/<secretName>`. */
  get location(): string {
    return `Secret ${this.#owner.namespace}/${this.#owner.secretName}`;
  }

  /**
   * What the Secret holds now; undefined when there is none, it is incomplete, or the claim
   * does not own it.
   */
  async read(): Promise<PublishedCredentials | undefined> {
    const data = await this.#ownData();
    return data && credentialsFromSecret((key) => data[key]);
  }

  /**
   * When the current content was published (the {@link PUBLISHED_AT_ANNOTATION} annotation),
   * or undefined.
   */
  async publishedAt(): Promise<Date | undefined> {
    const secret = await this.#get();
    const at =
      secret && this.#owns(secret) ? secret.metadata?.annotations?.[PUBLISHED_AT_ANNOTATION] : undefined;
    return at ? new Date(at) : undefined;
  }

  /** {@inheritDoc SecretSink.differs} */
  async differs(credentials: PublishedCredentials, dsnName: string): Promise<boolean> {
    const data = await this.#ownData();
    if (!data) return true;
    return secretDiffers((key) => data[key], Object.keys(data).length, secretFiles(credentials, dsnName));
  }

  /**
   * Creates the Secret (owned by the claim), or updates it in place when its content
   * differs, retrying on a write conflict (409, up to 5 attempts). Resolves whether it changed.
   *
   * @throws {@link SecretOwnershipError} when the Secret exists and the claim does not own
   * it (it is left untouched)
   */
  async publish(
    credentials: PublishedCredentials,
    dsnName: string,
    onStep?: (action: string) => Promise<void>,
  ): Promise<boolean> {
    const files = secretFiles(credentials, dsnName);
    await onStep?.('publish-secret:write');
    let attempt = 0;
    return retryOnConflict(async () => {
      // The first attempt trusts what this reconcile read; a retry (409) reads the API again.
      const fresh = attempt++ > 0;
      if (fresh) this.#known = undefined;
      const current = await this.#get(fresh);
      if (!current) {
        this.#remember(
          await this.#writing(() =>
            this.#clients.core.createNamespacedSecret({
              namespace: this.#owner.namespace,
              body: this.#desired(files),
            }),
          ),
        );
        return true;
      }
      if (!this.#owns(current))
        throw new SecretOwnershipError(
          `Secret ${this.#owner.namespace}/${this.#owner.secretName} exists and is not owned by DatabaseClaim ${this.#owner.name}; it is left untouched`,
        );
      const data = decode(current.data ?? {});
      if (!secretDiffers((key) => data[key], Object.keys(data).length, files) && current.type === 'Opaque')
        return false;
      const body: V1Secret = {
        ...current,
        type: 'Opaque',
        data: encode(files),
        metadata: {
          ...current.metadata,
          labels: { ...current.metadata?.labels, ...MANAGED_BY_LABEL },
          annotations: {
            ...current.metadata?.annotations,
            [PUBLISHED_AT_ANNOTATION]: this.#now().toISOString(),
          },
        },
      };
      delete body.stringData;
      // Updated in place (same object): the kubelet swaps the mounted files atomically.
      this.#remember(
        await this.#writing(() =>
          this.#clients.core.replaceNamespacedSecret({
            name: this.#owner.secretName,
            namespace: this.#owner.namespace,
            body,
          }),
        ),
      );
      return true;
    });
  }

  /** A Kubernetes Secret is replaced whole: a publish never leaves anything behind. */
  async stale(): Promise<string[]> {
    return [];
  }

  /** Nothing to sweep (see {@link KubeSecretSink.stale}). */
  async sweep(): Promise<void> {}

  /**
   * No lock file: one leader writes (Lease), and every Secret write carries the
   * resourceVersion it read (a concurrent write is a 409, retried on a fresh read).
   */
  lock<T>(work: () => Promise<T>): Promise<T> {
    return work();
  }

  /** Deletes the Secret, if it exists and is owned by the claim (someone else's is left alone). */
  async remove(): Promise<void> {
    const current = await this.#get();
    if (!current || !this.#owns(current)) return;
    try {
      await this.#writing(() =>
        this.#clients.core.deleteNamespacedSecret({
          name: this.#owner.secretName,
          namespace: this.#owner.namespace,
        }),
      );
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    this.#remember(undefined);
  }

  async #ownData(): Promise<Record<string, string> | undefined> {
    const secret = await this.#get();
    return secret && this.#owns(secret) ? decode(secret.data ?? {}) : undefined;
  }

  /**
   * The Secret as this sink last read or wrote it. A sink serves one reconcile, which reads
   * the Secret up to three times (read, differs, publish): one GET answers them all.
   */
  async #get(fresh = false): Promise<V1Secret | undefined> {
    if (this.#known !== undefined) return this.#known.secret;
    const cached = fresh ? undefined : this.cache?.get(this.#owner.namespace, this.#owner.secretName);
    if (cached) {
      this.#known = { secret: cached };
      return cached;
    }
    if (!fresh && this.#newClaim && this.cache?.knowsAbsent(this.#owner.namespace, this.#owner.secretName)) {
      this.#known = { secret: undefined };
      return undefined;
    }
    let secret: V1Secret | undefined;
    try {
      secret = await this.#clients.core.readNamespacedSecret({
        name: this.#owner.secretName,
        namespace: this.#owner.namespace,
      });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
    this.#known = { secret };
    return secret;
  }

  /** Runs one write of the Secret, told to the cache (its watch event is ours, not a change by others). */
  #writing<T>(write: () => Promise<T>): Promise<T> {
    const { namespace, secretName } = this.#owner;
    return this.cache ? this.cache.writing(namespace, secretName, write) : write();
  }

  /** What this sink just wrote (or deleted): its next reads, and the cache's trust. */
  #remember(secret: V1Secret | undefined): void {
    this.#known = { secret };
    this.cache?.wrote(this.#owner.namespace, this.#owner.secretName, secret);
  }

  #owns(secret: V1Secret): boolean {
    return (secret.metadata?.ownerReferences ?? []).some(
      (reference) => reference.uid === this.#owner.uid && reference.controller === true,
    );
  }

  #desired(files: Record<string, string>): V1Secret {
    return {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: this.#owner.secretName,
        namespace: this.#owner.namespace,
        labels: { ...MANAGED_BY_LABEL },
        annotations: { [PUBLISHED_AT_ANNOTATION]: this.#now().toISOString() },
        ownerReferences: [ownerReference(this.#owner)],
      },
      data: encode(files),
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

function encode(data: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]),
  );
}

function decode(data: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64').toString('utf8')]),
  );
}
