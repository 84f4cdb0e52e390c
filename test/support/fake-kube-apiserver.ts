/**
 * A FAKE Kubernetes API server, in process, over HTTP: no real API server can run on these
 * machines, so the controller's tests point the real `@kubernetes/client-node` at this.
 *
 * It keeps only the API conventions a controller relies on
 * (https://github.com/kubernetes/community/blob/master/contributors/devel/sig-architecture/api-conventions.md):
 * - one cluster-wide, increasing `resourceVersion`; lists carry it in `metadata`;
 * - watches replay history after a `resourceVersion`, stream newline-delimited JSON events,
 *   send `BOOKMARK`s when `allowWatchBookmarks=true`, and answer a version older than the
 *   kept history with an `ERROR` event holding a `410 Gone` Status (then close);
 * - `PUT` with a stale `metadata.resourceVersion` is `409 Conflict`; `POST` of an existing
 *   name is `409 AlreadyExists`; errors are `Status` objects;
 * - types with a status subresource ignore `status` on the main resource and everything
 *   but `status` on `/status`; `metadata.generation` moves only when `spec` changes;
 * - `DELETE` of an object with finalizers sets `deletionTimestamp`; it goes away when the
 *   last finalizer is removed; new finalizers cannot be added once it is deleting;
 * - background garbage collection: an object whose every `ownerReference` is gone is
 *   deleted too.
 * Not implemented: selectors, PATCH, server-side apply, admission, authentication.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One kind of resource the fake serves. */
export interface FakeResourceType {
  /** '' for the core group (`/api/v1`). */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly kind: string;
  readonly statusSubresource: boolean;
}

/** A stored object: plain JSON as the API returns it. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: KubeMetadata;
  [field: string]: unknown;
}

/** The `metadata` fields the fake acts on. */
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

/** A write the fake is about to apply; see {@link FakeKubeApiServer.beforeWrite}. */
export interface FakeWrite {
  readonly verb: 'create' | 'update' | 'delete';
  readonly plural: string;
  readonly namespace: string;
  readonly name: string;
  readonly subresource: string | undefined;
}

/** Watch event types of object changes. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface HistoryEntry {
  readonly resourceVersion: number;
  readonly plural: string;
  readonly type: WatchEventType;
  readonly object: KubeObject;
}

interface OpenWatch {
  readonly plural: string;
  readonly namespace: string | undefined;
  readonly response: ServerResponse;
  readonly bookmarks: boolean;
}

/** The types every fake serves; more can be passed to {@link FakeKubeApiServer.start}. */
export const CORE_FAKE_TYPES: readonly FakeResourceType[] = [
  { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', statusSubresource: false },
  { group: '', version: 'v1', plural: 'events', kind: 'Event', statusSubresource: false },
  {
    group: 'coordination.k8s.io',
    version: 'v1',
    plural: 'leases',
    kind: 'Lease',
    statusSubresource: false,
  },
];

class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** A change the fake applied: emitted as `change` (what a watch would see). */
export interface FakeChange {
  readonly type: WatchEventType;
  readonly plural: string;
  readonly object: KubeObject;
}

/**
 * The fake API server. Start with {@link FakeKubeApiServer.start}; always `close()`.
 * Emits `change` ({@link FakeChange}) after every committed write and `watch-open`
 * (`{ plural, namespace }`) when a watch stream starts, so tests wait on events.
 */
export class FakeKubeApiServer extends EventEmitter {
  readonly #server: Server;
  readonly #types: Map<string, FakeResourceType>;
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  readonly #history: HistoryEntry[] = [];
  readonly #watches = new Set<OpenWatch>();
  #resourceVersion = 1;
  /** Oldest version a watch may start after; older ones are answered with 410 Gone. */
  #oldestWatchable = 1;
  /** Every write request served: `VERB path` (for asserting who wrote what). */
  readonly audit: string[] = [];
  /** Runs before each write is applied (a test can make a competing write here). */
  beforeWrite: ((write: FakeWrite) => Promise<void> | void) | undefined;

  private constructor(server: Server, types: readonly FakeResourceType[]) {
    super();
    this.#server = server;
    this.#types = new Map(types.map((type) => [type.plural, type]));
    for (const type of types) this.#objects.set(type.plural, new Map());
  }

  /** Starts listening on a free loopback port. */
  static async start(extraTypes: readonly FakeResourceType[] = []): Promise<FakeKubeApiServer> {
    let fake: FakeKubeApiServer | undefined;
    const server = createServer((request, response) => {
      fake?.handle(request, response).catch((error: unknown) => {
        if (!response.headersSent) fake?.sendError(response, error);
        else response.end();
      });
    });
    fake = new FakeKubeApiServer(server, [...CORE_FAKE_TYPES, ...extraTypes]);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** The current cluster-wide resourceVersion. */
  get resourceVersion(): string {
    return String(this.#resourceVersion);
  }

  /** A stored object (a copy), or undefined. */
  get(plural: string, namespace: string, name: string): KubeObject | undefined {
    const object = this.#store(plural).get(`${namespace}/${name}`);
    return object ? structuredClone(object) : undefined;
  }

  /** Every stored object of a type (copies). */
  list(plural: string): KubeObject[] {
    return [...this.#store(plural).values()].map((object) => structuredClone(object));
  }

  /** Forgets the watch history: a watch from any earlier version now gets 410 Gone. */
  compactHistory(): void {
    this.#history.length = 0;
    this.#oldestWatchable = this.#resourceVersion;
  }

  /** Ends every open watch stream (as an API server restart or a load balancer would). */
  dropWatches(): void {
    for (const watch of this.#watches) watch.response.end();
    this.#watches.clear();
  }

  /** Sends a BOOKMARK at the current version on every watch that asked for bookmarks. */
  sendBookmarks(): void {
    for (const watch of this.#watches) {
      if (!watch.bookmarks) continue;
      const type = this.#type(watch.plural);
      const object = {
        apiVersion: apiVersion(type),
        kind: type.kind,
        metadata: { resourceVersion: this.resourceVersion },
      };
      watch.response.write(`${JSON.stringify({ type: 'BOOKMARK', object })}\n`);
    }
  }

  /** Number of open watch streams. */
  get openWatches(): number {
    return this.#watches.size;
  }

  /** Stops listening and ends every connection. */
  async close(): Promise<void> {
    this.dropWatches();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://fake');
    const route = parsePath(url.pathname);
    if (!route || !this.#types.has(route.plural)) throw new ApiError(404, 'NotFound', 'no such path');
    const method = request.method ?? 'GET';
    if (method !== 'GET') this.audit.push(`${method} ${url.pathname}`);
    const body = method === 'POST' || method === 'PUT' ? await readJson(request) : undefined;
    const { plural, namespace, name, subresource } = route;
    if (method === 'GET' && name === undefined) {
      if (url.searchParams.get('watch') === 'true') return this.watch(url, plural, namespace, response);
      return this.send(response, 200, this.listBody(plural, namespace));
    }
    if (namespace === undefined || (name === undefined && method !== 'POST'))
      throw new ApiError(405, 'MethodNotAllowed', `${method} needs a namespaced object path`);
    if (method === 'GET') return this.send(response, 200, this.mustGet(plural, namespace, name!));
    const write = (verb: FakeWrite['verb'], objectName: string) =>
      this.beforeWrite?.({ verb, plural, namespace, name: objectName, subresource });
    if (method === 'POST') {
      const object = body as KubeObject;
      await write('create', object.metadata?.name ?? '');
      return this.send(response, 201, this.create(plural, namespace, object));
    }
    if (method === 'PUT') {
      await write('update', name!);
      return this.send(response, 200, this.update(plural, namespace, name!, body as KubeObject, subresource));
    }
    if (method === 'DELETE') {
      await write('delete', name!);
      return this.send(response, 200, this.delete(plural, namespace, name!));
    }
    throw new ApiError(405, 'MethodNotAllowed', `${method} is not supported by the fake`);
  }

  private listBody(plural: string, namespace: string | undefined): object {
    const type = this.#type(plural);
    const items = [...this.#store(plural).values()].filter(
      (object) => namespace === undefined || object.metadata.namespace === namespace,
    );
    return {
      apiVersion: apiVersion(type),
      kind: `${type.kind}List`,
      metadata: { resourceVersion: this.resourceVersion },
      items,
    };
  }

  private watch(url: URL, plural: string, namespace: string | undefined, response: ServerResponse): void {
    const from = Number(url.searchParams.get('resourceVersion') || '0');
    response.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    // The client waits for the headers before it reads events: send them now.
    response.flushHeaders();
    if (from !== 0 && from < this.#oldestWatchable) {
      const status = statusBody(
        410,
        'Expired',
        `too old resource version: ${from} (${this.#oldestWatchable})`,
      );
      response.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      return;
    }
    const watch: OpenWatch = {
      plural,
      namespace,
      response,
      bookmarks: url.searchParams.get('allowWatchBookmarks') === 'true',
    };
    const backlog =
      from === 0
        ? [...this.#store(plural).values()]
            .filter((object) => namespace === undefined || object.metadata.namespace === namespace)
            .map((object) => ({ type: 'ADDED', object }))
        : this.#history
            .filter((entry) => entry.resourceVersion > from && this.#matches(watch, entry))
            .map(({ type, object }) => ({ type, object }));
    for (const event of backlog) response.write(`${JSON.stringify(event)}\n`);
    this.#watches.add(watch);
    this.emit('watch-open', { plural, namespace });
    const timeoutSeconds = Number(url.searchParams.get('timeoutSeconds') || '0');
    const timer = timeoutSeconds > 0 ? setTimeout(() => response.end(), timeoutSeconds * 1000) : undefined;
    response.on('close', () => {
      clearTimeout(timer);
      this.#watches.delete(watch);
    });
  }

  #matches(watch: OpenWatch, entry: HistoryEntry): boolean {
    return (
      entry.plural === watch.plural &&
      (watch.namespace === undefined || entry.object.metadata.namespace === watch.namespace)
    );
  }

  private mustGet(plural: string, namespace: string, name: string): KubeObject {
    const object = this.#store(plural).get(`${namespace}/${name}`);
    if (!object) throw new ApiError(404, 'NotFound', `${plural} "${name}" not found`);
    return object;
  }

  /** Creates an object as `POST` does (tests set up state with it). */
  create(plural: string, namespace: string, input: KubeObject): KubeObject {
    const type = this.#type(plural);
    const name = input.metadata?.name;
    if (!name) throw new ApiError(422, 'Invalid', 'metadata.name: Required value');
    if (this.#store(plural).has(`${namespace}/${name}`))
      throw new ApiError(409, 'AlreadyExists', `${plural} "${name}" already exists`);
    const object: KubeObject = structuredClone(input);
    if (type.statusSubresource) delete object.status;
    object.apiVersion = apiVersion(type);
    object.kind = type.kind;
    object.metadata = {
      ...object.metadata,
      namespace,
      uid: randomUUID(),
      generation: 1,
      creationTimestamp: new Date().toISOString(),
    };
    delete object.metadata.deletionTimestamp;
    return this.#commit(plural, 'ADDED', object);
  }

  /** Replaces an object (or its `status`) as `PUT` does, 409 on a stale resourceVersion. */
  update(
    plural: string,
    namespace: string,
    name: string,
    input: KubeObject,
    subresource: string | undefined,
  ): KubeObject {
    const type = this.#type(plural);
    const current = this.mustGet(plural, namespace, name);
    if (subresource !== undefined && (subresource !== 'status' || !type.statusSubresource))
      throw new ApiError(404, 'NotFound', `no subresource ${subresource} on ${plural}`);
    const wanted = input.metadata?.resourceVersion;
    if (wanted !== undefined && wanted !== current.metadata.resourceVersion)
      throw new ApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${plural} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    let next: KubeObject;
    if (subresource === 'status') {
      next = { ...structuredClone(current), status: structuredClone(input.status) };
    } else {
      next = structuredClone(input);
      next.apiVersion = current.apiVersion;
      next.kind = current.kind;
      if (type.statusSubresource) next.status = structuredClone(current.status);
      const kept = [
        'uid',
        'creationTimestamp',
        'deletionTimestamp',
        'generation',
        'namespace',
        'name',
      ] as const;
      next.metadata = { ...next.metadata };
      for (const key of kept) {
        if (current.metadata[key] === undefined) delete next.metadata[key];
        else next.metadata[key] = current.metadata[key] as never;
      }
      if (JSON.stringify(next.spec) !== JSON.stringify(current.spec))
        next.metadata.generation = (current.metadata.generation ?? 1) + 1;
      const before = new Set(current.metadata.finalizers ?? []);
      const added = (next.metadata.finalizers ?? []).filter((f) => !before.has(f));
      if (current.metadata.deletionTimestamp && added.length > 0)
        throw new ApiError(
          422,
          'Invalid',
          `metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
        );
      if (current.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
        this.#remove(plural, next);
        return next;
      }
    }
    return this.#commit(plural, 'MODIFIED', next);
  }

  /** Deletes an object as `DELETE` does (finalizers first, then garbage collection). */
  delete(plural: string, namespace: string, name: string): KubeObject {
    const current = this.mustGet(plural, namespace, name);
    if ((current.metadata.finalizers ?? []).length > 0) {
      if (current.metadata.deletionTimestamp) return current;
      const next = structuredClone(current);
      next.metadata.deletionTimestamp = new Date().toISOString();
      return this.#commit(plural, 'MODIFIED', next);
    }
    return this.#remove(plural, current);
  }

  #remove(plural: string, object: KubeObject): KubeObject {
    const key = `${object.metadata.namespace}/${object.metadata.name}`;
    this.#store(plural).delete(key);
    const gone = this.#record(plural, 'DELETED', object);
    this.#collectGarbage(object.metadata.uid);
    return gone;
  }

  /** Deletes (honouring finalizers) every object whose last owner was `ownerUid`. */
  #collectGarbage(ownerUid: string | undefined): void {
    if (!ownerUid) return;
    const live = new Set(
      [...this.#objects.values()].flatMap((store) => [...store.values()].map((o) => o.metadata.uid)),
    );
    for (const [plural, store] of this.#objects) {
      for (const object of [...store.values()]) {
        const owners = object.metadata.ownerReferences ?? [];
        if (!owners.some((owner) => owner.uid === ownerUid)) continue;
        if (owners.some((owner) => live.has(owner.uid))) continue;
        this.delete(plural, object.metadata.namespace ?? '', object.metadata.name);
      }
    }
  }

  #commit(plural: string, type: WatchEventType, object: KubeObject): KubeObject {
    this.#store(plural).set(`${object.metadata.namespace}/${object.metadata.name}`, object);
    return this.#record(plural, type, object);
  }

  /** Gives `object` the next resourceVersion and tells the watches. */
  #record(plural: string, type: WatchEventType, object: KubeObject): KubeObject {
    this.#resourceVersion++;
    object.metadata.resourceVersion = this.resourceVersion;
    const entry: HistoryEntry = {
      resourceVersion: this.#resourceVersion,
      plural,
      type,
      object: structuredClone(object),
    };
    this.#history.push(entry);
    for (const watch of this.#watches) {
      if (this.#matches(watch, entry))
        watch.response.write(`${JSON.stringify({ type, object: entry.object })}\n`);
    }
    this.emit('change', { type, plural, object: structuredClone(object) } satisfies FakeChange);
    return structuredClone(object);
  }

  #store(plural: string): Map<string, KubeObject> {
    const store = this.#objects.get(plural);
    if (!store) throw new Error(`the fake serves no type "${plural}"`);
    return store;
  }

  #type(plural: string): FakeResourceType {
    return this.#types.get(plural)!;
  }

  private send(response: ServerResponse, code: number, body: object): void {
    response.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  private sendError(response: ServerResponse, error: unknown): void {
    const apiError =
      error instanceof ApiError ? error : new ApiError(500, 'InternalError', (error as Error).message);
    this.send(response, apiError.code, statusBody(apiError.code, apiError.reason, apiError.message));
  }
}

function apiVersion(type: FakeResourceType): string {
  return type.group === '' ? type.version : `${type.group}/${type.version}`;
}

function statusBody(code: number, reason: string, message: string): object {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

interface Route {
  readonly plural: string;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly subresource: string | undefined;
}

/** `/api/v1/...` or `/apis/<group>/<version>/...`, then `[namespaces/<ns>/]<plural>[/<name>[/<sub>]]`. */
function parsePath(pathname: string): Route | undefined {
  const parts = pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : undefined;
  if (!rest || rest.length === 0) return undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    return { namespace: rest[1], plural: rest[2]!, name: rest[3], subresource: rest[4] };
  }
  return rest.length === 1
    ? { plural: rest[0]!, namespace: undefined, name: undefined, subresource: undefined }
    : undefined;
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new ApiError(400, 'BadRequest', 'the body is not JSON');
  }
}
