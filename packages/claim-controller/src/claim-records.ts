/**
 * The controller's second record of what each claim owns, kept apart from the claim: a
 * claim whose finalizer was stripped by hand, or that was deleted while no controller ran,
 * disappears with its status, and its database and roles would be left forever. The record
 * holds where a claim's database and users live (the binding and the retired bindings of its
 * status: never a password) and whether it allowed dropping data. A claim that is gone but
 * still recorded is cleaned up by that record (`ClaimController`), then its record is removed.
 *
 * **One small ConfigMap per claim** in the controller's namespace, named after a hash of the
 * claim's key and labelled {@link RECORDS_LABEL}. Why not the alternatives:
 * - One shared ConfigMap (the format before this one) was rewritten whole for every claim,
 *   one write at a time across all workers (each new claim re-sent every record so far), and
 *   reaches the 1 MiB object limit near 4,000 claims. Coalescing its writes within a tick
 *   makes fewer writes but not smaller ones, and not a larger limit.
 * - An annotation on a request the controller already makes cannot hold it: the claim and
 *   its status vanish together, and the claim's Secret is owned by the claim, so the garbage
 *   collector removes it too (with the record) exactly when the record is needed.
 * A ConfigMap per claim is written in parallel with other claims' (and with the claim's own
 * status write), costs one request only when a claim's record changes, and has no limit but
 * the namespace's object count.
 *
 * **Upgrade:** the shared ConfigMap of the earlier format (named {@link ClaimRecordsLocation.name},
 * the per-claim ones' prefix) is read at {@link ClaimRecords.load}: each of its records is
 * written as a per-claim ConfigMap (its record wins: an older controller that still wrote it
 * wrote it last), then it is deleted, only if unchanged since read. An older controller
 * started again after that (a rollback) does not read per-claim records.
 *
 * Every write carries the resourceVersion it read; a 409 re-reads that claim's record and
 * writes again. Written only when a claim's record changes (a no-op resync writes nothing).
 *
 * **A record that does not parse** (edited by hand, written by something else) stops nothing:
 * it is listed in {@link ClaimRecords.unreadable} with its ConfigMap and problem, and left as
 * it is, since it may be the only trace of a vanished claim's database. Every other claim goes
 * on. A claim that still exists writes its record over it (its status is the first record);
 * a claim that is gone cannot be cleaned up by it until someone mends it. A shared ConfigMap
 * of the earlier format with such a field is migrated but not deleted.
 */
import { createHash } from 'node:crypto';
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
  /**
   * The records' name, default {@link DEFAULT_RECORDS_NAME}: each claim's ConfigMap is named
   * `<name>-<hash of the claim's key>` and labelled {@link RECORDS_LABEL}`=<name>` (so at most
   * 63 characters); the earlier format's one ConfigMap had this name.
   */
  readonly name?: string;
}

/** Name of the records unless told otherwise. */
export const DEFAULT_RECORDS_NAME = 'hotload-claim-records';

/** Label on each record's ConfigMap; its value is the records' name. */
export const RECORDS_LABEL = 'hotload-claim-reconciler/records';

/** Fields of a record's ConfigMap: the claim's `namespace/name`, and the record as JSON. */
const CLAIM_FIELD = 'claim';
const RECORD_FIELD = 'record';

/** Legacy records moved at once while migrating (bounded, not one at a time). */
const MIGRATION_CONCURRENCY = 8;
/** Attempts of one write that meets 409s (another writer, e.g. a previous leader). */
const WRITE_ATTEMPTS = 5;

/** A record as stored: the ConfigMap's resourceVersion, for the next write. */
interface StoredRecord {
  readonly record: ClaimRecord;
  readonly resourceVersion: string | undefined;
}

/** A record ConfigMap (or a field of the earlier format's shared one) that does not parse. */
export interface UnreadableRecord {
  /** `namespace/name` of the ConfigMap. */
  readonly configMap: string;
  /** What is wrong, naming the ConfigMap and field (a record holds no secret). */
  readonly problem: string;
}

/** An unreadable per-claim ConfigMap, by its name: its resourceVersion lets a claim's write replace it. */
interface UnreadableMap extends UnreadableRecord {
  readonly resourceVersion: string | undefined;
}

/** The records, listed once and then kept in step with what this process writes. */
export class ClaimRecords {
  readonly #clients: KubeClients;
  readonly #namespace: string;
  readonly #name: string;
  #records = new Map<string, StoredRecord>();
  /** Per ConfigMap name: the record ConfigMaps that did not parse. */
  readonly #unreadableMaps = new Map<string, UnreadableMap>();
  /** Fields of the earlier format's shared ConfigMap that did not parse. */
  #unreadableShared: UnreadableRecord[] = [];
  /** Per claim key: its write under way, so two writes of one record never race. */
  readonly #writes = new Map<string, Promise<unknown>>();

  constructor(clients: KubeClients, location: ClaimRecordsLocation) {
    this.#clients = clients;
    this.#namespace = location.namespace;
    this.#name = location.name ?? DEFAULT_RECORDS_NAME;
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(this.#name))
      throw new Error(
        `claim records name "${this.#name}" must be a DNS label of at most 63 characters (it is a label value and a name prefix)`,
      );
  }

  /** Lists the records, then migrates the earlier format's shared ConfigMap if there is one. */
  async load(): Promise<void> {
    this.#records = await this.#list();
    await this.#migrateShared();
  }

  /** The records that did not parse, left as they are (see the module comment). */
  unreadable(): UnreadableRecord[] {
    return [...this.#unreadableMaps.values()]
      .map(({ configMap, problem }) => ({ configMap, problem }))
      .concat(this.#unreadableShared);
  }

  /** The claims (`namespace/name`) recorded. */
  keys(): string[] {
    return [...this.#records.keys()];
  }

  /** The record of claim `key`, or undefined. */
  get(key: string): ClaimRecord | undefined {
    return this.#records.get(key)?.record;
  }

  /** Records `record` for claim `key`; no write when it is recorded exactly so already. */
  put(key: string, record: ClaimRecord): Promise<void> {
    if (sameRecord(this.get(key), record)) return Promise.resolve();
    return this.#serialized(key, () => this.#store(key, record));
  }

  /** Forgets claim `key`; no write when it is not recorded. */
  remove(key: string): Promise<void> {
    if (!this.#records.has(key) && !this.#unreadableMaps.has(this.#mapName(key))) return Promise.resolve();
    return this.#serialized(key, async () => {
      try {
        await this.#clients.core.deleteNamespacedConfigMap({
          name: this.#mapName(key),
          namespace: this.#namespace,
        });
      } catch (error) {
        if (!isNotFound(error)) throw error;
      }
      this.#records.delete(key);
      this.#unreadableMaps.delete(this.#mapName(key));
    });
  }

  async #list(): Promise<Map<string, StoredRecord>> {
    const records = new Map<string, StoredRecord>();
    this.#unreadableMaps.clear();
    let continueToken: string | undefined;
    do {
      const page = await this.#clients.core.listNamespacedConfigMap({
        namespace: this.#namespace,
        labelSelector: `${RECORDS_LABEL}=${this.#name}`,
        limit: 500,
        ...(continueToken ? { _continue: continueToken } : {}),
      });
      for (const map of page.items) {
        const parsed = this.#parse(map);
        if (parsed) records.set(parsed[0], parsed[1]);
      }
      continueToken = page.metadata?._continue || undefined;
    } while (continueToken);
    return records;
  }

  /** The earlier format: one ConfigMap named `#name`, a field per claim. See the module comment. */
  async #migrateShared(): Promise<void> {
    this.#unreadableShared = [];
    for (let attempt = 1; ; attempt++) {
      let shared: V1ConfigMap;
      try {
        shared = await this.#clients.core.readNamespacedConfigMap({
          name: this.#name,
          namespace: this.#namespace,
        });
      } catch (error) {
        if (isNotFound(error)) return;
        throw error;
      }
      const entries: [string, ClaimRecord][] = [];
      const unreadable: UnreadableRecord[] = [];
      for (const [field, text] of Object.entries(shared.data ?? {})) {
        const where = this.#describe(this.#name, field);
        const record = tryParseRecord(text, where);
        if (typeof record === 'string')
          unreadable.push({ configMap: this.#qualified(this.#name), problem: record });
        else entries.push([sharedClaimKey(field), record]);
      }
      this.#unreadableShared = unreadable;
      for (let i = 0; i < entries.length; i += MIGRATION_CONCURRENCY)
        await Promise.all(
          entries.slice(i, i + MIGRATION_CONCURRENCY).map(([key, record]) => this.put(key, record)),
        );
      // A field that did not parse has nowhere else to live: the shared ConfigMap stays.
      if (unreadable.length > 0) return;
      try {
        // Only the version read: a write made meanwhile (an older leader) is migrated next round.
        await this.#clients.core.deleteNamespacedConfigMap({
          name: this.#name,
          namespace: this.#namespace,
          body: { preconditions: { resourceVersion: shared.metadata?.resourceVersion } },
        });
        return;
      } catch (error) {
        if (isNotFound(error)) return;
        if (!isConflict(error) || attempt >= WRITE_ATTEMPTS) throw error;
      }
    }
  }

  async #store(key: string, record: ClaimRecord): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const known = this.#records.get(key) ?? this.#unreadableMaps.get(this.#mapName(key));
      const body = this.#configMap(key, record, known?.resourceVersion);
      try {
        const stored = known
          ? await this.#clients.core.replaceNamespacedConfigMap({
              name: this.#mapName(key),
              namespace: this.#namespace,
              body,
            })
          : await this.#clients.core.createNamespacedConfigMap({ namespace: this.#namespace, body });
        this.#records.set(key, { record, resourceVersion: stored.metadata?.resourceVersion });
        this.#unreadableMaps.delete(this.#mapName(key));
        return;
      } catch (error) {
        // Someone else wrote (409) or removed (404 on replace) it: start from what is there now.
        const stale = isConflict(error) || (known !== undefined && isNotFound(error));
        if (!stale || attempt >= WRITE_ATTEMPTS) throw error;
        await this.#reread(key);
      }
    }
  }

  async #reread(key: string): Promise<void> {
    try {
      const map = await this.#clients.core.readNamespacedConfigMap({
        name: this.#mapName(key),
        namespace: this.#namespace,
      });
      const parsed = this.#parse(map);
      if (parsed) this.#records.set(key, parsed[1]);
      else this.#records.delete(key);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      this.#records.delete(key);
      this.#unreadableMaps.delete(this.#mapName(key));
    }
  }

  #serialized(key: string, write: () => Promise<void>): Promise<void> {
    const previous = this.#writes.get(key) ?? Promise.resolve();
    const next = previous.then(write);
    const settled = next.catch(() => {});
    this.#writes.set(key, settled);
    void settled.then(() => {
      if (this.#writes.get(key) === settled) this.#writes.delete(key);
    });
    return next;
  }

  #configMap(key: string, record: ClaimRecord, resourceVersion: string | undefined): V1ConfigMap {
    return {
      metadata: {
        name: this.#mapName(key),
        namespace: this.#namespace,
        labels: { ...MANAGED_BY_LABEL, [RECORDS_LABEL]: this.#name },
        ...(resourceVersion === undefined ? {} : { resourceVersion }),
      },
      data: { [CLAIM_FIELD]: key, [RECORD_FIELD]: JSON.stringify(record) },
    };
  }

  /** `<name>-<hash>`: a claim's key may hold more than a ConfigMap name allows. */
  #mapName(key: string): string {
    return `${this.#name}-${createHash('sha256').update(key).digest('hex').slice(0, 20)}`;
  }

  /** The claim key and record of `map`; undefined (and noted in #unreadableMaps) when it does not parse. */
  #parse(map: V1ConfigMap): [string, StoredRecord] | undefined {
    const name = map.metadata?.name ?? '';
    const resourceVersion = map.metadata?.resourceVersion;
    const key = map.data?.[CLAIM_FIELD];
    const record = key
      ? tryParseRecord(map.data?.[RECORD_FIELD] ?? '', this.#describe(name, RECORD_FIELD))
      : `${this.#describe(name, CLAIM_FIELD)}: missing`;
    if (typeof record === 'string') {
      this.#unreadableMaps.set(name, { configMap: this.#qualified(name), problem: record, resourceVersion });
      return undefined;
    }
    this.#unreadableMaps.delete(name);
    return [key as string, { record, resourceVersion }];
  }

  #describe(name: string, field: string): string {
    return `claim record ConfigMap ${this.#qualified(name)}, field ${field}`;
  }

  #qualified(name: string): string {
    return `${this.#namespace}/${name}`;
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

/**
 * A record's JSON, or what is wrong with it: `where` names the ConfigMap and field (a record
 * holds no secret, so the problem may be shown as it is).
 */
function tryParseRecord(text: string, where: string): ClaimRecord | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return `${where}: not JSON`;
  }
  const record = value as Partial<ClaimRecord> | null;
  if (
    typeof record?.uid !== 'string' ||
    typeof record.secretName !== 'string' ||
    !Array.isArray(record.retired)
  )
    return `${where}: not a claim record (uid, secretName and retired are required)`;
  return record as ClaimRecord;
}

// The shared ConfigMap's keys may not hold '/'; a namespace holds no '.', so the first '.' splits.
function sharedClaimKey(field: string): string {
  return field.replace('.', '/');
}
