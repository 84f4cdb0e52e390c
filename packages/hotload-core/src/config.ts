import { createHmac, randomBytes } from 'node:crypto';
import { inspect } from 'node:util';
import { SourceError } from './errors.js';
import {
  isSslMode,
  LIBPQ_KEYWORDS,
  SECRET_KEYWORDS,
  SSL_NEGOTIATIONS,
  type SslMode,
  TLS_ONLY_SSL_MODES,
} from './params.js';
import { REDACTED } from './redact.js';

export type { SslMode } from './params.js';

/** The port used when a source names none (libpq's default). */
export const DEFAULT_PORT = 5432;

/** One host of a (possibly multi-host) config. */
export interface HostPort {
  /** The host name, IP address, or Unix socket directory (a path starting with `/`). */
  readonly host: string;
  /** The TCP port (for a socket directory, the port in the socket file's name). */
  readonly port: number;
}

/** What {@link ConnectionConfig.create} accepts. Give `hosts`, or `host` (+ `port`). */
export interface ConnectionConfigInit {
  /** The single host (ignored when `hosts` is given). */
  host?: string | undefined;
  /**
   * The port of `host`.
   *
   * @defaultValue 5432 ({@link DEFAULT_PORT})
   */
  port?: number | undefined;
  /** The host list, tried in order (libpq's multi-host `host=a,b`); an entry without a port gets 5432. */
  hosts?: ReadonlyArray<{ readonly host: string; readonly port?: number | undefined }> | undefined;
  /** The role to log in as (required). */
  user: string;
  /** The password; omit it for trust, peer or `.pgpass` authentication. A secret: never shown. */
  password?: string | undefined;
  /** The database to connect to (libpq's `dbname`; required). */
  database: string;
  /** libpq's sslmode; when absent, the driver's own TLS settings apply. */
  sslmode?: SslMode | undefined;
  /**
   * Other libpq parameters (non-secret): `application_name`, `connect_timeout`,
   * `options`, `sslrootcert`, `sslcert`, `sslkey`, `target_session_attrs`, ...
   */
  params?: Readonly<Record<string, string>> | undefined;
  /** Secret libpq parameters other than the password (`sslpassword`, `oauth_client_secret` ...). */
  secretParams?: Readonly<Record<string, string>> | undefined;
}

/** What {@link ConnectionConfig.with} accepts. */
export type ConnectionConfigChanges = Partial<ConnectionConfigInit>;

/** One problem found while validating; `key` is always a known key name. */
export interface ConfigProblem {
  /**
   * `incomplete` when a required field is missing, `invalid-value` when a value is not
   * acceptable (as in {@link SourceErrorCode}).
   */
  readonly code: 'incomplete' | 'invalid-value';
  /**
   * The key the problem is about (`host`, `port`, `user`, `dbname`, `sslmode`, `params` ...);
   * never a name read from content.
   */
  readonly key: string;
  /** What is wrong, in words written by hotload-core (never a value). */
  readonly problem: string;
}

// One random key per process: fingerprints are comparable within a process, and say
// nothing about the password even when logged or used as a metric label (a plain hash of
// a weak password could be brute-forced).
const FINGERPRINT_KEY = randomBytes(32);

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;
const MAX_NAME_LENGTH = 1024;
const MAX_VALUE_LENGTH = 64 * 1024;

/**
 * A validated, normalized PostgreSQL connection config: at least one host, a port for
 * each (default 5432), a user and a database; the password is optional (libpq allows
 * none: trust, peer or `.pgpass` authentication).
 *
 * Secrets (the password and `secretParams`) live in private fields, readable through
 * getters; `toString()`, `toJSON()` (so `JSON.stringify`) and `util.inspect` show
 * `[REDACTED]` in their place.
 *
 * Immutable. `fingerprint` is an HMAC-SHA256 (hex) of every field, secrets included,
 * keyed with a random per-process key: within a process two configs are equal exactly
 * when their fingerprints are.
 */
export class ConnectionConfig {
  /** The hosts, in the order libpq tries them (at least one; each with its port). */
  readonly hosts: readonly HostPort[];
  /** The role to log in as. */
  readonly user: string;
  /** The database to connect to. */
  readonly database: string;
  /** libpq's sslmode, or `undefined` when the source named none. */
  readonly sslmode: SslMode | undefined;
  /**
   * The other (non-secret) libpq parameters, sorted by name: `application_name`,
   * `connect_timeout`, `sslrootcert` ...
   */
  readonly params: Readonly<Record<string, string>>;
  /**
   * HMAC-SHA256 (hex) of every field, secrets included, with a per-process random key: equal
   * exactly when the configs are, within one process; safe to log.
   */
  readonly fingerprint: string;
  readonly #password: string | undefined;
  readonly #secretParams: Readonly<Record<string, string>>;

  private constructor(init: {
    hosts: HostPort[];
    user: string;
    password: string | undefined;
    database: string;
    sslmode: SslMode | undefined;
    params: Record<string, string>;
    secretParams: Record<string, string>;
  }) {
    this.hosts = Object.freeze(init.hosts.map((h) => Object.freeze({ host: h.host, port: h.port })));
    this.user = init.user;
    this.#password = init.password;
    this.database = init.database;
    this.sslmode = init.sslmode;
    this.params = Object.freeze(sortedRecord(init.params));
    this.#secretParams = Object.freeze(sortedRecord(init.secretParams));
    this.fingerprint = computeFingerprint(this);
    Object.freeze(this);
  }

  /** Validates and builds a config; throws a {@link SourceError} if it is not acceptable. */
  static create(init: ConnectionConfigInit): ConnectionConfig {
    const result = ConnectionConfig.tryCreate(init);
    if (result instanceof ConnectionConfig) return result;
    const first = result[0]!;
    throw new SourceError({
      code: first.code,
      source: 'ConnectionConfig',
      key: first.key,
      problem: result.map((p) => `${p.key}: ${p.problem}`).join('; '),
    });
  }

  /** Like {@link ConnectionConfig.create}, but returns the list of problems instead of throwing. */
  static tryCreate(init: ConnectionConfigInit): ConnectionConfig | ConfigProblem[] {
    const problems: ConfigProblem[] = [];
    const rawHosts =
      init.hosts ??
      (init.host === undefined || init.host === '' ? [] : [{ host: init.host, port: init.port }]);
    if (rawHosts.length === 0) problems.push({ code: 'incomplete', key: 'host', problem: 'no host' });
    const hosts: HostPort[] = [];
    for (const h of rawHosts) {
      const hostProblem = checkHost(h.host);
      if (hostProblem) problems.push({ code: 'invalid-value', key: 'host', problem: hostProblem });
      const port = h.port ?? DEFAULT_PORT;
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        problems.push({ code: 'invalid-value', key: 'port', problem: 'must be an integer from 1 to 65535' });
      }
      hosts.push({ host: h.host, port });
    }
    checkName(init.user, 'user', problems);
    checkName(init.database, 'dbname', problems);
    if (init.password !== undefined) checkValue(init.password, 'password', problems);
    if (init.sslmode !== undefined && !isSslMode(init.sslmode)) {
      problems.push({ code: 'invalid-value', key: 'sslmode', problem: 'unknown sslmode' });
    }
    checkSslNegotiation(init.params?.sslnegotiation, init.sslmode, problems);
    const params = checkParams(init.params ?? {}, false, problems);
    const secretParams = checkParams(init.secretParams ?? {}, true, problems);
    if (problems.length > 0) return problems;
    return new ConnectionConfig({
      hosts,
      user: init.user,
      password: init.password,
      database: init.database,
      sslmode: init.sslmode,
      params,
      secretParams,
    });
  }

  /** The first host (libpq tries hosts in order). */
  get host(): string {
    return this.hosts[0]!.host;
  }

  /** The first host's port. */
  get port(): number {
    return this.hosts[0]!.port;
  }

  /** The password, or `undefined` when none was given. A secret: do not log it. */
  get password(): string | undefined {
    return this.#password;
  }

  /** Secret libpq parameters other than the password (e.g. `sslpassword`). Do not log them. */
  get secretParams(): Readonly<Record<string, string>> {
    return this.#secretParams;
  }

  /** True when both configs hold the same values, secrets included. */
  equals(other: ConnectionConfig | undefined): boolean {
    return other !== undefined && other.fingerprint === this.fingerprint;
  }

  /** The same config with some fields replaced, validated like {@link ConnectionConfig.create}. */
  with(changes: ConnectionConfigChanges): ConnectionConfig {
    const next: ConnectionConfigInit = {
      hosts: this.hosts,
      user: this.user,
      password: this.#password,
      database: this.database,
      sslmode: this.sslmode,
      params: this.params,
      secretParams: this.#secretParams,
    };
    if (changes.host !== undefined || changes.port !== undefined) {
      next.hosts = [
        { host: changes.host ?? this.host, port: changes.port ?? this.port },
        ...this.hosts.slice(1),
      ];
    }
    const { host: _host, port: _port, ...rest } = changes;
    for (const [name, value] of Object.entries(rest)) {
      // `password: undefined` is a request to remove the password, so `in` and not `??`
      (next as unknown as Record<string, unknown>)[name] = value;
    }
    return ConnectionConfig.create(next);
  }

  /** The redacted, JSON-safe view. */
  toJSON(): Record<string, unknown> {
    return {
      hosts: this.hosts.map((h) => ({ host: h.host, port: h.port })),
      user: this.user,
      password: this.#password === undefined ? undefined : REDACTED,
      database: this.database,
      sslmode: this.sslmode,
      params: { ...this.params },
      secretParams: Object.fromEntries(Object.keys(this.#secretParams).map((k) => [k, REDACTED])),
      fingerprint: this.fingerprint,
    };
  }

  /** A URI-like description with the password redacted, e.g. `postgres://app:[REDACTED]@db:5432/app`. */
  toString(): string {
    const auth = `${encodeURIComponent(this.user)}${this.#password === undefined ? '' : `:${REDACTED}`}`;
    const hosts = this.hosts.map((h) => `${formatHostForUri(h.host)}:${h.port}`).join(',');
    const query = this.sslmode ? `?sslmode=${this.sslmode}` : '';
    return `postgres://${auth}@${hosts}/${encodeURIComponent(this.database)}${query}`;
  }

  /**
   * `util.inspect` (and `console.log`) shows `ConnectionConfig <...>` with the
   * {@link ConnectionConfig.toString} text: the password redacted.
   */
  [inspect.custom](): string {
    return `ConnectionConfig <${this.toString()}>`;
  }
}

/** Brackets IPv6 addresses and percent-encodes socket directories, for URIs. */
export function formatHostForUri(host: string): string {
  if (host.startsWith('/')) return encodeURIComponent(host);
  if (host.includes(':')) return `[${host}]`;
  return host;
}

function checkHost(host: string): string | undefined {
  if (typeof host !== 'string' || host.length === 0) return 'empty host name';
  if (host.length > MAX_NAME_LENGTH) return 'host name too long';
  if (CONTROL_CHARS.test(host)) return 'host name contains control characters';
  if (host.startsWith('/')) return undefined; // a Unix socket directory
  if (/[\s,/?#@[\]]/.test(host)) return 'host name contains whitespace or one of , / ? # @ [ ]';
  return undefined;
}

function checkName(value: string, key: string, problems: ConfigProblem[]): void {
  if (typeof value !== 'string' || value.length === 0) {
    problems.push({ code: 'incomplete', key, problem: `no ${key}` });
  } else if (value.length > MAX_NAME_LENGTH) {
    problems.push({ code: 'invalid-value', key, problem: 'too long' });
  } else if (CONTROL_CHARS.test(value)) {
    problems.push({ code: 'invalid-value', key, problem: 'contains control characters' });
  }
}

function checkValue(value: string, key: string, problems: ConfigProblem[]): void {
  if (typeof value !== 'string') problems.push({ code: 'invalid-value', key, problem: 'must be text' });
  else if (value.includes('\u0000'))
    problems.push({ code: 'invalid-value', key, problem: 'contains NUL bytes' });
  else if (value.length > MAX_VALUE_LENGTH)
    problems.push({ code: 'invalid-value', key, problem: 'too long' });
}

/**
 * libpq's rules for `sslnegotiation`: `postgres` or `direct`, and `direct` (TLS from the
 * first byte, no SSLRequest) only with an sslmode that always uses TLS. pg 8.23 refuses
 * `direct` without TLS when it builds a client; caught here, it is the source's error.
 */
function checkSslNegotiation(
  value: string | undefined,
  sslmode: string | undefined,
  problems: ConfigProblem[],
): void {
  if (value === undefined) return;
  if (!SSL_NEGOTIATIONS.includes(value)) {
    problems.push({ code: 'invalid-value', key: 'sslnegotiation', problem: 'must be postgres or direct' });
  } else if (value === 'direct' && (sslmode === undefined || !TLS_ONLY_SSL_MODES.has(sslmode))) {
    problems.push({
      code: 'invalid-value',
      key: 'sslnegotiation',
      problem: 'direct needs an sslmode that always uses TLS (require, verify-ca or verify-full)',
    });
  }
}

function checkParams(
  record: Readonly<Record<string, string>>,
  secret: boolean,
  problems: ConfigProblem[],
): Record<string, string> {
  const out: Record<string, string> = {};
  const where = secret ? 'secretParams' : 'params';
  for (const [name, value] of Object.entries(record)) {
    if (!LIBPQ_KEYWORDS.has(name)) {
      // the name itself is not printed: it may come from file contents
      problems.push({ code: 'invalid-value', key: where, problem: 'unknown connection parameter' });
    } else if (
      name === 'password' ||
      (['host', 'port', 'user', 'dbname', 'sslmode'].includes(name) && !secret)
    ) {
      problems.push({
        code: 'invalid-value',
        key: name,
        problem: `has its own field; not allowed in ${where}`,
      });
    } else if (SECRET_KEYWORDS.has(name) !== secret) {
      problems.push({
        code: 'invalid-value',
        key: name,
        problem: secret ? 'not a secret parameter' : 'secret parameter given in params',
      });
    } else {
      checkValue(value, name, problems);
      out[name] = value;
    }
  }
  return out;
}

function sortedRecord(record: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of Object.keys(record).sort()) out[key] = record[key]!;
  return out;
}

function computeFingerprint(config: ConnectionConfig): string {
  const canonical = JSON.stringify([
    config.hosts.map((h) => [h.host, h.port]),
    config.user,
    config.password ?? null,
    config.database,
    config.sslmode ?? null,
    Object.entries(config.params),
    Object.entries(config.secretParams),
  ]);
  return createHmac('sha256', FINGERPRINT_KEY).update(canonical).digest('hex');
}
