/**
 * The controller's second record of what each claim owns, kept apart from the claim: a
 * claim whose finalizer was stripped by hand, or that was deleted while no controller ran,
 * disappears with its status, and its database and roles would be left forever. One
 * ConfigMap in the controller's namespace holds, per claim, where its database and users
 * live (the binding and the retired bindings of its status: never a password) and whether
 * it allowed dropping data. A claim that is gone but still recorded is cleaned up by that
 * record (`ClaimController`), then its record is removed.
 *
 * Written only when a claim's record changes (a no-op resync writes nothing); every write
 * carries the resourceVersion it read, and a 409 re-reads and reapplies the one change.
 */
import { isDeepStrictEqual } from 'node:util';
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Binding, ClaimStatus } from 'hotload-claim-reconciler';
import { isConflict, isNotFound, type KubeClients } from './kube-clients.js';
import { MANAGED_BY_LABEL } from './managed-by.js';

/** What the controller keeps of one claim. */
export interface ClaimRecord {
  /** The claim's uid: its Secret (owned by that uid) is removed with it. */
  readonly uid: string;
  /** The name of the claim's Secret. */
  readonly secretName: string;
  /** Where its database and users live now; null before the first publish. */
  readonly binding: Binding | null;
  /** Earlier bindings still waiting for their deletion policy. */
  readonly retired: readonly Binding[];
  /** Whether the claim allowed dropping data (the `allow-delete` annotation). */
  readonly allowDataDeletion: boolean;
}

/** Where the records live. */
export interface ClaimRecordsLocation {
  /** The controller's namespace. */
  readonly namespace: string;
  /** The ConfigMap's name; default {@link DEFAULT_RECORDS_NAME}. */
  readonly name?: string;
}

/** Name of the records ConfigMap unless told otherwise. */
export const DEFAULT_RECORDS_NAME = 'hotload-claim-records';

/** The records ConfigMap, read once and then kept in step with what this process writes. */
export class ClaimRecords {
  readonly #clients: KubeClients;
  readonly #namespace: string;
  readonly #name: string;
  #records = new Map<string, ClaimRecord>();
  #resourceVersion: string | undefined;
  /** One write at a time from this process: each starts from the last one's version. */
  #writes: Promise<unknown> = Promise.resolve();

  constructor(clients: KubeClients, location: ClaimRecordsLocation) {
    this.#clients = clients;
    this.#namespace = location.namespace;
    this.#name = location.name ?? DEFAULT_RECORDS_NAME;
  }

  /** Reads the ConfigMap (none yet: no records). */
  async load(): Promise<void> {
    let map: V1ConfigMap;
    try {
      map = await this.#clients.core.readNamespacedConfigMap({
        name: this.#name,
        namespace: this.#namespace,
      });
    } catch (error) {
      if (!isNotFound(error)) throw error;
      this.#records = new Map();
      this.#resourceVersion = undefined;
      return;
    }
    this.#records = new Map(
      Object.entries(map.data ?? {}).map(([field, text]) => [
        claimKey(field),
        JSON.parse(text) as ClaimRecord,
      ]),
    );
    this.#resourceVersion = map.metadata?.resourceVersion;
  }

  /** The claims (`namespace/name`) recorded. */
  keys(): string[] {
    return [...this.#records.keys()];
  }

  /** The record of claim `key`, or undefined. */
  get(key: string): ClaimRecord | undefined {
    return this.#records.get(key);
  }

  /** Records `record` for claim `key`; no write when it is recorded exactly so already. */
  put(key: string, record: ClaimRecord): Promise<void> {
    if (sameRecord(this.#records.get(key), record)) return Promise.resolve();
    return this.#write((records) => records.set(key, record));
  }

  /** Forgets claim `key`; no write when it is not recorded. */
  remove(key: string): Promise<void> {
    if (!this.#records.has(key)) return Promise.resolve();
    return this.#write((records) => records.delete(key));
  }

  #write(change: (records: Map<string, ClaimRecord>) => void): Promise<void> {
    const write = this.#writes.then(async () => {
      for (let attempt = 1; ; attempt++) {
        const next = new Map(this.#records);
        change(next);
        try {
          await this.#store(next);
          this.#records = next;
          return;
        } catch (error) {
          // Another writer (a previous leader) went first: read its version, apply ours again.
          if (!isConflict(error) || attempt >= 5) throw error;
          await this.load();
        }
      }
    });
    this.#writes = write.catch(() => {});
    return write;
  }

  async #store(records: Map<string, ClaimRecord>): Promise<void> {
    const body: V1ConfigMap = {
      metadata: {
        name: this.#name,
        namespace: this.#namespace,
        labels: { ...MANAGED_BY_LABEL },
        ...(this.#resourceVersion === undefined ? {} : { resourceVersion: this.#resourceVersion }),
      },
      data: Object.fromEntries([...records].map(([key, record]) => [field(key), JSON.stringify(record)])),
    };
    const stored =
      this.#resourceVersion === undefined
        ? await this.#clients.core.createNamespacedConfigMap({ namespace: this.#namespace, body })
        : await this.#clients.core.replaceNamespacedConfigMap({
            name: this.#name,
            namespace: this.#namespace,
            body,
          });
    this.#resourceVersion = stored.metadata?.resourceVersion;
  }
}

/** The record of a claim's recorded state, or undefined when it owns nothing yet. */
export function recordOf(
  uid: string,
  state: ClaimStatus | undefined,
  allowDataDeletion: boolean,
): ClaimRecord | undefined {
  if (!state || (state.binding === null && state.retired.length === 0)) return undefined;
  const { secretName, binding, retired } = state;
  return { uid, secretName, binding, retired, allowDataDeletion };
}

/** The claim status a record stands for, as the deletion of a vanished claim needs it. */
export function statusOf(key: string, record: ClaimRecord): ClaimStatus {
  const namespace = key.slice(0, key.indexOf('/'));
  return {
    claim: key,
    namespace,
    secretName: record.secretName,
    error: null,
    matchedLabel: record.binding?.label ?? null,
    binding: record.binding,
    activeUser: null,
    dbCreatedAt: null,
    connectionInfoUpdatedAt: null,
    userUpdatedAt: null,
    retired: record.retired,
    deleting: true,
  };
}

function sameRecord(a: ClaimRecord | undefined, b: ClaimRecord): boolean {
  return a !== undefined && isDeepStrictEqual(a, b);
}

// ConfigMap keys may not hold '/'; a namespace holds no '.', so the first '.' splits.
function field(key: string): string {
  return key.replace('/', '.');
}

function claimKey(field: string): string {
  return field.replace('.', '/');
}
