/**
 * The Secrets the controller publishes, from an informer (label
 * `app.kubernetes.io/managed-by=hotload-claim-reconciler`), so that a reconcile reads its
 * Secret without a GET: a resync of unchanged claims then costs no request at all.
 *
 * An informer lags the writes it is told about by a moment. A Secret this process wrote is
 * served from the cache only once the cache holds that very version (client-go's
 * "expectations", in small): until then, and for a Secret not in the cache (none yet, or
 * someone else's without the label), the sink reads it from the API.
 */
import type { KubernetesListObject, KubernetesObject, V1Secret } from '@kubernetes/client-node';
import { CLAIM_KIND } from 'hotload-claim-reconciler';
import type { KubeClients } from './kube-clients.js';
import { MANAGED_BY_LABEL } from './managed-by.js';
import { type InformerChange, type ResourceDescription, ResourceInformer } from './resource-informer.js';

/** Core Secrets carrying the controller's label. */
const MANAGED_SECRETS: ResourceDescription = {
  kind: 'Secret',
  group: '',
  version: 'v1',
  plural: 'secrets',
  labelSelector: Object.entries(MANAGED_BY_LABEL)
    .map(([key, value]) => `${key}=${value}`)
    .join(','),
  list: async (clients, namespace, labelSelector) =>
    (namespace
      ? await clients.core.listNamespacedSecret({ namespace, labelSelector })
      : await clients.core.listSecretForAllNamespaces({
          labelSelector,
        })) as KubernetesListObject<KubernetesObject>,
};

/** See the module comment. */
export class SecretCache {
  readonly #informer: ResourceInformer<V1Secret>;
  /** Per `namespace/name`: the resourceVersion this process last wrote (or `deleted`). */
  readonly #written = new Map<string, string>();
  /** Per `namespace/name`: writes of this process under way (see {@link SecretCache.writing}). */
  readonly #writing = new Map<string, number>();

  /**
   * @param onError - a list or watch failed (the message; a restart with backoff follows,
   *   and reads go to the API meanwhile for what the cache does not hold)
   * @param onChangedByOthers - the owning claim's key (`namespace/name`) of a Secret deleted
   *   or changed by someone else
   */
  constructor(
    clients: KubeClients,
    namespaces: readonly string[] | undefined,
    onError: (message: string) => void,
    restartBaseMillis?: number,
    onChangedByOthers: (claimKey: string) => void = () => {},
  ) {
    // Never re-sent to a handler: the cache only answers reads.
    this.#informer = new ResourceInformer<V1Secret>(
      clients,
      MANAGED_SECRETS,
      { namespaces, resyncMillis: 2 ** 31 - 1, restartBaseMillis },
      () => {},
    );
    // An EventEmitter's 'error' without a listener throws: a dropped watch must not.
    this.#informer.on('error', onError);
    this.#informer.on('change', (change: InformerChange<V1Secret>) => {
      const owner = this.#changedByOthers(change);
      if (owner !== undefined) onChangedByOthers(owner);
    });
  }

  /** Lists and watches; resolves once the first list is in. */
  start(): Promise<void> {
    return this.#informer.start();
  }

  /** Stops watching. */
  stop(): Promise<void> {
    return this.#informer.stop();
  }

  /**
   * The Secret `namespace/name` as cached, when the cache can be trusted for it (see the
   * module comment); undefined: read it from the API.
   */
  get(namespace: string, name: string): V1Secret | undefined {
    const key = `${namespace}/${name}`;
    const cached = this.#informer.get(key);
    const written = this.#written.get(key);
    if (!cached || (written !== undefined && cached.metadata?.resourceVersion !== written)) return undefined;
    return cached;
  }

  /**
   * Whether the Secret `namespace/name` is not in the cache and this process has not written
   * it since it last deleted it (or ever). Absence can lag like presence: an unlabelled
   * Secret is never cached, and one just created elsewhere may not be yet. So it is only
   * believed where a wrong answer costs nothing (see `KubeSecretSink`'s `newClaim`): a create
   * then meets a 409 and the Secret is read from the API.
   */
  knowsAbsent(namespace: string, name: string): boolean {
    const key = `${namespace}/${name}`;
    if (this.#informer.get(key)) return false;
    const written = this.#written.get(key);
    return written === undefined || written === 'deleted';
  }

  /**
   * Runs `write`, this process's write of the Secret `namespace/name`: the watch may bring its
   * event before the answer does, and that event is not someone else's change.
   */
  async writing<T>(namespace: string, name: string, write: () => Promise<T>): Promise<T> {
    const key = `${namespace}/${name}`;
    this.#writing.set(key, (this.#writing.get(key) ?? 0) + 1);
    try {
      return await write();
    } finally {
      const left = (this.#writing.get(key) ?? 1) - 1;
      if (left > 0) this.#writing.set(key, left);
      else this.#writing.delete(key);
    }
  }

  /** This process wrote `secret` (its new resourceVersion), or deleted it (undefined). */
  wrote(namespace: string, name: string, secret: V1Secret | undefined): void {
    this.#written.set(`${namespace}/${name}`, secret?.metadata?.resourceVersion ?? 'deleted');
  }

  /** The owning claim's key when `change` is not this process's own last write, else undefined. */
  #changedByOthers({ type, object }: InformerChange<V1Secret>): string | undefined {
    if (type === 'add') return undefined;
    const { namespace, name, resourceVersion, ownerReferences } = object.metadata ?? {};
    const key = `${namespace}/${name}`;
    if (this.#writing.has(key)) return undefined;
    const written = this.#written.get(key);
    if (type === 'delete' ? written === 'deleted' : written === resourceVersion) return undefined;
    const owner = ownerReferences?.find((reference) => reference.kind === CLAIM_KIND && reference.controller);
    return owner && `${namespace}/${owner.name}`;
  }
}
