import { createHmac, randomBytes } from 'node:crypto';
import type { SrvRecord } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import type { ConnectionConfig, HostPort } from './config.js';
import { createSource } from './create-source.js';
import { SourceError } from './errors.js';
import { relabel } from './snapshot-source.js';
import type { ConnectionSource, SourceKind, SourceSnapshot, SourceSpec } from './source.js';

/** Options of {@link SrvSource}. */
export interface SrvSourceOptions {
  /** The SRV name to resolve, e.g. `_postgresql._tcp.db.example`. */
  readonly name: string;
  /**
   * Where everything but the hosts comes from: user, password, database, sslmode, ... (a
   * Secret folder, usually). Its host, if any, is replaced by the SRV targets.
   */
  readonly base: SourceSpec | ConnectionSource;
  /**
   * DNS servers to ask (`'10.0.0.2'`, `'127.0.0.1:5353'`, `'[::1]:53'`), as
   * `Resolver#setServers` takes them; the system's resolvers by default.
   */
  readonly servers?: readonly string[];
  /**
   * How often the name is resolved again (the source watcher re-reads at least this often).
   *
   * @defaultValue 30000
   */
  readonly resolveIntervalMillis?: number;
  /**
   * Timeout of one DNS query (node's `Resolver` `timeout`), tried `tries` times.
   *
   * @defaultValue 2000
   */
  readonly timeoutMillis?: number;
  /**
   * Attempts per query.
   *
   * @defaultValue 2
   */
  readonly tries?: number;
}

const DEFAULT_RESOLVE_INTERVAL_MILLIS = 30_000;

/**
 * SRV discovery: the hosts come from an SRV name resolved with node's DNS resolver, the
 * rest of the config from `base`. The targets become the config's host list in RFC 2782
 * order: lowest priority first; within a priority, a weighted random order (a target of
 * weight 20 comes first twice as often as one of weight 10; weight 0 rarely first). The
 * random draw is fixed per source object and answer, so the same answer gives the same
 * config (no switch) while processes spread over the targets by weight. The generation
 * manager then serves on the first target that verifies (target_session_attrs applies).
 *
 * Re-resolved on `resolveIntervalMillis`, on every change of `base`, and after a
 * connection failure (`rereadOnConnectionFailure`): a changed answer is a source change
 * (verify → switch → drain). A name that does not resolve, or resolves to no target, is a
 * `SourceError` (`missing` / `empty`), which never replaces a working config.
 */
export class SrvSource implements ConnectionSource {
  /** Always `srv`. */
  readonly kind: SourceKind = 'srv';
  /** `srv <name> + <base description>`: secret-free. */
  readonly description: string;
  /** The base source's paths. */
  readonly watchPaths: readonly string[];
  /** The SRV name. */
  readonly name: string;
  /** See {@link SrvSourceOptions.resolveIntervalMillis}. */
  readonly rereadIntervalMillis: number;
  /** Always true: a target that stopped answering may have left the DNS answer. */
  readonly rereadOnConnectionFailure = true;
  readonly #base: ConnectionSource;
  readonly #resolver: Resolver;
  /** Seeds the weighted order: fixed for this source, different in every process. */
  readonly #seed = randomBytes(16);

  constructor(options: SrvSourceOptions) {
    this.name = options.name;
    this.#base = createSource(options.base);
    this.description = `srv ${options.name} + ${this.#base.description}`;
    this.watchPaths = this.#base.watchPaths;
    this.rereadIntervalMillis = options.resolveIntervalMillis ?? DEFAULT_RESOLVE_INTERVAL_MILLIS;
    if (!Number.isFinite(this.rereadIntervalMillis) || this.rereadIntervalMillis <= 0) {
      throw new RangeError('resolveIntervalMillis must be a positive number of milliseconds');
    }
    this.#resolver = new Resolver({ timeout: options.timeoutMillis ?? 2_000, tries: options.tries ?? 2 });
    if (options.servers !== undefined) this.#resolver.setServers([...options.servers]);
  }

  /** Reads the base and resolves the name now (see {@link SrvSource.readSnapshot}). */
  async read(): Promise<ConnectionConfig> {
    return (await this.readSnapshot()).config;
  }

  /** Reads the base, resolves the name, and puts the targets in as the host list. */
  async readSnapshot(): Promise<SourceSnapshot> {
    const base = this.#base.readSnapshot
      ? await this.#base.readSnapshot()
      : { config: await this.#base.read(), changedAt: Date.now() };
    const hosts = orderSrvRecords(await this.#resolve(), this.#seed);
    try {
      return { config: base.config.with({ hosts }), changedAt: base.changedAt };
    } catch (error) {
      throw relabel(error, this.description);
    }
  }

  async #resolve(): Promise<SrvRecord[]> {
    let records: SrvRecord[];
    try {
      records = await this.#resolver.resolveSrv(this.name);
    } catch (error) {
      const errno = (error as NodeJS.ErrnoException).code;
      // ENODATA: the name exists without an SRV record, an empty answer (reported below).
      if (errno !== 'ENODATA') {
        throw new SourceError({
          code: errno === 'ENOTFOUND' ? 'missing' : 'unreadable',
          source: this.description,
          key: 'host',
          problem:
            errno === 'ENOTFOUND'
              ? `the SRV name ${this.name} does not resolve`
              : `resolving the SRV name ${this.name} failed`,
          errno,
        });
      }
      records = [];
    }
    // RFC 2782: a single record with target "." means the service is decidedly not available.
    const targets = records.filter((r) => r.name !== '' && r.name !== '.');
    if (targets.length === 0) {
      throw new SourceError({
        code: 'empty',
        source: this.description,
        key: 'host',
        problem: `the SRV name ${this.name} resolved to no target`,
      });
    }
    return targets;
  }
}

/**
 * RFC 2782's order, deterministic for a given `seed`: by priority (lowest first); within
 * a priority, a weighted random permutation (Efraimidis–Spirakis: each target drawn a
 * uniform `u` from the seed and its name, ordered by `u^(1/weight)` descending), weight 0
 * counted as a tiny weight so such targets come last but for rare draws, as the RFC asks.
 */
export function orderSrvRecords(records: readonly SrvRecord[], seed: Uint8Array): HostPort[] {
  const keyed = records.map((record) => {
    const digest = createHmac('sha256', seed).update(`${record.name}:${record.port}`).digest();
    const u = (digest.readUInt32BE(0) + 1) / 0x1_0000_0002; // in (0, 1)
    const weight = record.weight > 0 ? record.weight : 0.01;
    return { record, key: u ** (1 / weight) };
  });
  keyed.sort((a, b) => a.record.priority - b.record.priority || b.key - a.key);
  return keyed.map(({ record }) => ({ host: record.name, port: record.port }));
}
