/**
 * Watches one kind of resource ({@link ResourceDescription}) with client-node's informer
 * (list, then watch from the list's resourceVersion; a `410 Gone` or an expired watch
 * clears the version so the informer lists again), in every namespace or in selected ones.
 * What client-node leaves to its user is here: restarting after any other watch or list
 * failure (with backoff), a periodic resync that hands every cached object to the handler
 * again, and a predicate (`reconcile-predicate.ts`) so that status-only updates are not
 * handed over. Every change, handed over or not, is also emitted as `change` for caches
 * kept beside the informer's own (the claims' status view).
 */
import { EventEmitter } from 'node:events';
import {
  type Informer,
  type KubernetesListObject,
  type KubernetesObject,
  makeInformer,
  type ObjectCache,
} from '@kubernetes/client-node';
import { describeApiError, type KubeClients } from './kube-clients.js';
import { needsReconcile, type ReconcileView, reconcileView } from './reconcile-predicate.js';

/** The resource an informer watches: its API coordinates. */
export interface ResourceDescription {
  /** `kind`, for messages (e.g. `DatabaseClaim`). */
  readonly kind: string;
  /** API group (e.g. `persistance.atlas.infoblox.com`); `''` for the core group (`/api/v1`). */
  readonly group: string;
  /** API version (e.g. `v1`). */
  readonly version: string;
  /** Plural resource name in the API path (e.g. `databaseclaims`). */
  readonly plural: string;
  /** Only objects with these labels (`key=value,...`). */
  readonly labelSelector?: string;
  /**
   * Lists the objects (in `namespace`, or in all): needed for a core resource; a custom
   * resource is listed through the custom objects API when absent.
   */
  readonly list?: (
    clients: KubeClients,
    namespace: string | undefined,
    labelSelector: string | undefined,
  ) => Promise<KubernetesListObject<KubernetesObject>>;
}

/** What an informer needs of an object: where it is. */
export interface NamedObject {
  /** The object's metadata; only its namespace and name are read here. */
  readonly metadata?: { readonly namespace?: string; readonly name?: string };
}

/** An object's `namespace/name`, the key a work queue holds. */
export function resourceKey(metadata: { namespace?: string; name?: string }): string {
  return `${metadata.namespace ?? ''}/${metadata.name ?? ''}`;
}

/** One change the informer's cache took in (emitted as `change`, after the cache has it). */
export interface InformerChange<T> {
  /** `add` (listed or created), `update`, or `delete`. */
  readonly type: 'add' | 'update' | 'delete';
  /** The object as cached now (for `delete`: as it was last seen). */
  readonly object: T;
}

/** Options of {@link ResourceInformer}. */
export interface ResourceInformerOptions {
  /** Namespaces to watch; empty or undefined: all. */
  readonly namespaces?: readonly string[];
  /** Every object is handed over again this often (a claim's rotations are found this way too). */
  readonly resyncMillis: number;
  /** Delay before restarting a failed watch: doubles from this up to 30 s. */
  readonly restartBaseMillis?: number;
}

/**
 * Events: `connect` (a list or watch (re)started), `error` (message; a restart follows),
 * `change` ({@link InformerChange}, every add, update and delete).
 */
export class ResourceInformer<T extends NamedObject> extends EventEmitter {
  readonly #informers: Array<Informer<KubernetesObject> & ObjectCache<KubernetesObject>>;
  readonly #resource: ResourceDescription;
  readonly #options: ResourceInformerOptions;
  readonly #onKey: (key: string) => void;
  #resync: NodeJS.Timeout | undefined;
  readonly #restarts = new Set<NodeJS.Timeout>();
  #stopped = false;
  /** Per key: what of the object a reconcile depends on, to skip status-only updates. */
  readonly #seen = new Map<string, ReconcileView>();

  constructor(
    clients: KubeClients,
    resource: ResourceDescription,
    options: ResourceInformerOptions,
    onKey: (key: string) => void,
  ) {
    super();
    this.#resource = resource;
    this.#options = options;
    this.#onKey = onKey;
    const namespaces = options.namespaces?.length ? options.namespaces : [undefined];
    this.#informers = namespaces.map((namespace) => this.#makeInformer(clients, namespace));
  }

  /** Lists and starts watching; resolves once every namespace's first list is in. */
  async start(): Promise<void> {
    this.#stopped = false;
    await Promise.all(this.#informers.map((informer) => informer.start()));
    this.#resync = setInterval(() => {
      for (const resource of this.list()) this.#onKey(resourceKey(resource.metadata ?? {}));
    }, this.#options.resyncMillis);
    this.#resync.unref();
  }

  /** Stops every watch and timer. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#resync);
    for (const timer of this.#restarts) clearTimeout(timer);
    this.#restarts.clear();
    await Promise.all(this.#informers.map((informer) => informer.stop()));
  }

  /** The cached object `namespace/name`, or undefined. */
  get(key: string): T | undefined {
    const [namespace, name] = splitKey(key);
    for (const informer of this.#informers) {
      const found = informer.get(name, namespace);
      if (found) return found as unknown as T;
    }
    return undefined;
  }

  /** Every cached object. */
  list(): T[] {
    return this.#informers.flatMap((informer) => informer.list() as unknown as T[]);
  }

  #makeInformer(clients: KubeClients, namespace: string | undefined) {
    const { kind, group, version, plural, labelSelector } = this.#resource;
    const base = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    const path = namespace
      ? `${base}/namespaces/${encodeURIComponent(namespace)}/${plural}`
      : `${base}/${plural}`;
    const request = { group, version, plural, ...(labelSelector ? { labelSelector } : {}) };
    // Custom objects come back as plain JSON lists.
    const list =
      this.#resource.list !== undefined
        ? () => this.#resource.list!(clients, namespace, labelSelector)
        : async () =>
            (namespace
              ? await clients.custom.listNamespacedCustomObject({ ...request, namespace })
              : await clients.custom.listClusterCustomObject(
                  request,
                )) as KubernetesListObject<KubernetesObject>;
    const informer = makeInformer<KubernetesObject>(clients.config, path, list, labelSelector);
    const handle = (type: InformerChange<T>['type'], resource: KubernetesObject) => {
      const key = resourceKey(resource.metadata ?? {});
      this.emit('change', { type, object: resource as unknown as T } satisfies InformerChange<T>);
      if (type === 'delete') {
        this.#seen.delete(key);
        this.#onKey(key);
        return;
      }
      const view = reconcileView(resource);
      const previous = this.#seen.get(key);
      this.#seen.set(key, view);
      // An update that is only our own status or finalizer write is not handed over.
      if (type === 'add' || needsReconcile(previous, view)) this.#onKey(key);
    };
    informer.on('add', (resource) => handle('add', resource));
    informer.on('update', (resource) => handle('update', resource));
    informer.on('delete', (resource) => handle('delete', resource));
    informer.on('connect', () => this.emit('connect', namespace));
    let failures = 0;
    informer.on('connect', () => {
      failures = 0;
    });
    informer.on('error', (error: unknown) => {
      if (this.#stopped) return;
      failures++;
      this.emit(
        'error',
        `watching ${kind}s${namespace ? ` in ${namespace}` : ''}: ${describeApiError(error)}`,
      );
      const delay = Math.min(30_000, (this.#options.restartBaseMillis ?? 500) * 2 ** (failures - 1));
      const timer = setTimeout(() => {
        this.#restarts.delete(timer);
        if (!this.#stopped) informer.start().catch(() => {});
      }, delay);
      this.#restarts.add(timer);
    });
    return informer;
  }
}

function splitKey(key: string): [string, string] {
  const slash = key.indexOf('/');
  return [key.slice(0, slash), key.slice(slash + 1)];
}
