/**
 * One controller in controller-runtime's shape, for any resource: an informer
 * ({@link ResourceInformer}) feeds keys to a work queue ({@link WorkQueue}); workers hand
 * each key, with the cached object (undefined once it is gone), to a reconcile function
 * that says what comes next (done, requeue after, or failed: per-key backoff). A reconcile
 * never runs twice at once for one key. A new resource is a {@link ResourceDescription}
 * and a reconcile function; this loop is the same for all.
 */
import { EventEmitter } from 'node:events';
import type { KubeClients } from './kube-clients.js';
import {
  type InformerChange,
  type NamedObject,
  type ResourceDescription,
  ResourceInformer,
  resourceKey,
} from './resource-informer.js';
import { type BackoffSettings, type WorkOutcome, WorkQueue } from './work-queue.js';

/** Reconciles one key: `object` is the cached object, undefined when it no longer exists. */
export type Reconcile<T> = (key: string, object: T | undefined) => Promise<WorkOutcome>;

/** Options of {@link ControllerLoop}. */
export interface ControllerLoopOptions {
  /** Namespaces to watch; empty: all. */
  readonly namespaces?: readonly string[];
  /** Keys reconciled at the same time (never two of one key); default 4. */
  readonly workers?: number;
  /** Every object is reconciled again this often. */
  readonly resyncMillis: number;
  /** Per-key backoff after a failed reconcile. */
  readonly backoff?: BackoffSettings;
  /** Delay before restarting a failed watch (doubles up to 30 s); default 500 ms. */
  readonly watchRestartMillis?: number;
}

/**
 * Events: `watch-connect` (namespace or undefined), `watch-error` (message; a restart
 * follows), `change` (an {@link InformerChange}: every add, update and delete the cache took in,
 * also those that need no reconcile).
 */
export class ControllerLoop<T extends NamedObject> extends EventEmitter {
  readonly #queue: WorkQueue;
  readonly #informer: ResourceInformer<T>;
  readonly #workers: number;
  #running: Promise<void> | undefined;

  constructor(
    clients: KubeClients,
    resource: ResourceDescription,
    options: ControllerLoopOptions,
    private readonly reconcile: Reconcile<T>,
  ) {
    super();
    this.#queue = new WorkQueue(options.backoff);
    this.#workers = options.workers ?? 4;
    this.#informer = new ResourceInformer<T>(
      clients,
      resource,
      {
        namespaces: options.namespaces,
        resyncMillis: options.resyncMillis,
        restartBaseMillis: options.watchRestartMillis,
      },
      (key) => this.#queue.add(key),
    );
    this.#informer.on('connect', (namespace) => this.emit('watch-connect', namespace));
    this.#informer.on('error', (message: string) => this.emit('watch-error', message));
    this.#informer.on('change', (change: InformerChange<T>) => this.emit('change', change));
  }

  /** Lists and watches, then starts the workers; resolves once the first list is in. */
  async start(): Promise<void> {
    await this.#informer.start();
    this.#running = this.#queue.run(async (key) => {
      const object = this.#informer.get(key);
      if (!object) this.#queue.forget(key);
      return this.reconcile(key, object);
    }, this.#workers);
  }

  /** Stops watching; reconciles in process finish first. */
  async stop(): Promise<void> {
    this.#queue.stop();
    await this.#informer.stop();
    await this.#running;
  }

  /** Whether the first list is in and the workers run (for `/readyz`). */
  get started(): boolean {
    return this.#running !== undefined;
  }

  /** Keys waiting or being reconciled (client-go's work-queue depth). */
  get queueDepth(): number {
    return this.#queue.length;
  }

  /** The cached object `key`, or undefined. */
  get(key: string): T | undefined {
    return this.#informer.get(key);
  }

  /** Reconciles `key` soon, whether or not an object of that key is cached. */
  enqueue(key: string): void {
    this.#queue.add(key);
  }

  /** Every cached object (read-only). */
  list(): T[] {
    return this.#informer.list();
  }

  /** Reconciles every cached object again soon (e.g. after the config changed). */
  enqueueAll(): void {
    for (const object of this.#informer.list()) this.#queue.add(resourceKey(object.metadata ?? {}));
  }
}
