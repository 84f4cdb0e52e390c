/**
 * The test's own view of a REAL API server, as an admin: create, read, update and delete
 * objects by plural name, and a `change` event ({@link KubeChange}) for every change a
 * watch of the given types sees, so a test waits for what it means ("the claim's Ready
 * status became True") instead of sleeping.
 *
 * Watches start from the resourceVersion of an initial list, so no change made after
 * {@link KubeObjects.open} resolves is missed, however late the stream connects.
 */
import { EventEmitter } from 'node:events';
import { type RequestOptions, request } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { type KubeConfig, Watch } from '@kubernetes/client-node';

/** An API object: plain JSON as the API returns it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: KubeMetadata;
  [field: string]: unknown;
}

/** The `metadata` fields tests read. */
export interface KubeMetadata {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  ownerReferences?: Array<{ uid: string; kind: string; name: string; apiVersion: string }>;
  labels?: Record<string, string>;
  [field: string]: unknown;
}

/** Watch event types of object changes. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** A change a watch saw: emitted by {@link KubeObjects} as `change`. */
export interface KubeChange {
  readonly type: WatchEventType;
  readonly plural: string;
  readonly object: KubeObject;
}

/** A resource type by its REST coordinates. */
export interface KubeResourceType {
  /** '' for the core group (`/api/v1`). */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

/** The built-in types the tests touch. */
export const BUILTIN_TYPES: readonly KubeResourceType[] = [
  { group: '', version: 'v1', plural: 'namespaces', namespaced: false },
  { group: '', version: 'v1', plural: 'secrets', namespaced: true },
  { group: '', version: 'v1', plural: 'events', namespaced: true },
  { group: '', version: 'v1', plural: 'configmaps', namespaced: true },
  { group: '', version: 'v1', plural: 'serviceaccounts', namespaced: true },
  { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespaced: true },
  { group: 'apps', version: 'v1', plural: 'deployments', namespaced: true },
  { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', namespaced: false },
];

/** An API error answered by the server: its HTTP status and `Status` body. */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly status: { reason?: string; message?: string; details?: unknown },
    /** The server's `Retry-After`, for 429 and 503. */
    readonly retryAfterSeconds = 1,
  ) {
    super(`${code} ${status.reason ?? ''}: ${status.message ?? ''}`);
  }
}

/**
 * One request to the API server `config` names, authenticated as `config`'s user. Resolves
 * with the parsed JSON body (or `{}`; a non-JSON body such as `/readyz`'s `ok` as
 * `{ message }`); rejects with {@link KubeApiError} on a non-2xx answer.
 */
export async function apiRequest(
  config: KubeConfig,
  method: string,
  path: string,
  body?: object,
  contentType = 'application/json',
): Promise<unknown> {
  const url = new URL(path, config.getCurrentCluster()?.server);
  const options: RequestOptions = { method, headers: { 'content-type': contentType } };
  await config.applyToHTTPSOptions(options);
  return new Promise((resolve, reject) => {
    const req = request(url, options, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
      });
      res.on('end', () => {
        const parsed = parseBody(text);
        const code = res.statusCode ?? 500;
        if (code >= 200 && code < 300) resolve(parsed);
        else reject(new KubeApiError(code, parsed, Number(res.headers['retry-after'] ?? 1)));
      });
    });
    req.on('error', reject);
    if (body !== undefined) req.write(JSON.stringify(body));
    req.end();
  });
}

function parseBody(text: string): { message?: string } {
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}

/** See the module comment. Emits `change` ({@link KubeChange}). */
export class KubeObjects extends EventEmitter {
  readonly #config: KubeConfig;
  readonly #types: Map<string, KubeResourceType>;
  readonly #aborts: AbortController[] = [];
  #closed = false;

  private constructor(config: KubeConfig, types: readonly KubeResourceType[]) {
    super();
    this.#config = config;
    this.#types = new Map([...BUILTIN_TYPES, ...types].map((type) => [type.plural, type]));
  }

  /**
   * Clients for `config` knowing `types` beside the built-in ones; watches `watched`
   * (plural names) across all namespaces and emits their changes.
   */
  static async open(
    config: KubeConfig,
    types: readonly KubeResourceType[],
    watched: readonly string[],
  ): Promise<KubeObjects> {
    const objects = new KubeObjects(config, types);
    for (const plural of watched) await objects.#watch(plural);
    return objects;
  }

  /** Creates `object` (its namespace too, when missing); resolves with the stored object. */
  async create(plural: string, namespace: string | undefined, object: KubeObject): Promise<KubeObject> {
    if (namespace !== undefined) await this.ensureNamespace(namespace);
    return this.request('POST', this.#path(plural, namespace), {
      ...object,
      metadata: { ...object.metadata, namespace },
    });
  }

  /** The object, or undefined when it does not exist. */
  async get(plural: string, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    try {
      return await this.request('GET', this.#path(plural, namespace, name));
    } catch (error) {
      if (error instanceof KubeApiError && error.code === 404) return undefined;
      throw error;
    }
  }

  /** Every object of `plural` (in `namespace`, or all). */
  async list(plural: string, namespace?: string): Promise<KubeObject[]> {
    const list = (await this.request('GET', this.#path(plural, namespace))) as unknown as {
      items: KubeObject[];
    };
    return list.items;
  }

  /** Replaces the object (optimistic concurrency through its `metadata.resourceVersion`). */
  async update(plural: string, object: KubeObject, subresource?: string): Promise<KubeObject> {
    const path = this.#path(plural, object.metadata.namespace, object.metadata.name);
    return this.request('PUT', subresource ? `${path}/${subresource}` : path, object);
  }

  /** A JSON merge patch of the object. */
  async patch(
    plural: string,
    namespace: string | undefined,
    name: string,
    patch: object,
  ): Promise<KubeObject> {
    return this.request('PATCH', this.#path(plural, namespace, name), patch, 'application/merge-patch+json');
  }

  /** Deletes the object (background propagation); a missing object is fine. */
  async delete(plural: string, namespace: string | undefined, name: string): Promise<void> {
    try {
      await this.request('DELETE', this.#path(plural, namespace, name));
    } catch (error) {
      if (!(error instanceof KubeApiError && error.code === 404)) throw error;
    }
  }

  /** Creates namespace `name` unless it exists. */
  async ensureNamespace(name: string): Promise<void> {
    try {
      await this.request('POST', '/api/v1/namespaces', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name },
      });
    } catch (error) {
      if (!(error instanceof KubeApiError && error.code === 409)) throw error;
    }
  }

  /** Stops the watches. */
  close(): void {
    this.#closed = true;
    for (const abort of this.#aborts) abort.abort();
  }

  /**
   * One API request; rejects with {@link KubeApiError} on a non-2xx answer. A `429` (the
   * apiserver's "storage is (re)initializing" just after a CRD is Established, or priority
   * and fairness) is retried after its `Retry-After`, as client-go does.
   */
  async request(
    method: string,
    path: string,
    body?: object,
    contentType = 'application/json',
  ): Promise<KubeObject> {
    for (let attempt = 1; ; attempt++) {
      try {
        return (await apiRequest(this.#config, method, path, body, contentType)) as KubeObject;
      } catch (error) {
        if (!(error instanceof KubeApiError && error.code === 429) || attempt >= 30) throw error;
        await sleep(Math.max(error.retryAfterSeconds, 1) * 1000);
      }
    }
  }

  #path(plural: string, namespace?: string, name?: string): string {
    const type = this.#types.get(plural);
    if (!type) throw new Error(`KubeObjects: unknown resource type ${plural}`);
    const base = type.group === '' ? `/api/${type.version}` : `/apis/${type.group}/${type.version}`;
    const scope = type.namespaced && namespace !== undefined ? `/namespaces/${namespace}` : '';
    return `${base}${scope}/${plural}${name !== undefined ? `/${name}` : ''}`;
  }

  async #watch(plural: string): Promise<void> {
    const listVersion = async () =>
      (
        (await this.request('GET', this.#path(plural))) as unknown as {
          metadata: { resourceVersion: string };
        }
      ).metadata.resourceVersion;
    let resourceVersion: string | undefined = await listVersion();
    const watch = new Watch(this.#config);
    const connect = async (): Promise<void> => {
      if (this.#closed) return;
      // After a 410 Gone (etcd compacted past our version) start again from a fresh list:
      // the test's view then misses what changed in between, which no test waits on.
      resourceVersion ??= await listVersion();
      const abort = await watch.watch(
        this.#path(plural),
        { resourceVersion, allowWatchBookmarks: true },
        (type: string, object: KubeObject) => {
          if (type === 'ERROR') {
            resourceVersion = undefined;
            return;
          }
          if (object.metadata?.resourceVersion) resourceVersion = object.metadata.resourceVersion;
          if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') {
            this.emit('change', { type: type as WatchEventType, plural, object } satisfies KubeChange);
          }
        },
        // The server ends watches after a while (--min-request-timeout): resume from the last version.
        () => {
          if (!this.#closed) void connect().catch(() => {});
        },
      );
      this.#aborts.push(abort);
    };
    await connect();
  }
}
