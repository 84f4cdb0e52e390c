import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  cpSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import pg from 'pg';
import {
  locateOtherPostgresBinaries,
  locatePostgresBinaries,
  type OTHER_MAJOR_VERSIONS,
  type PostgresBinaries,
} from './postgres-binaries.js';

/** Options for {@link startCluster}. */
export interface ClusterOptions {
  /** Extra `postgresql.conf` settings, e.g. `{ wal_level: 'logical' }`. */
  settings?: Readonly<Record<string, string | number | boolean>>;
  /** Superuser password; a random one by default. */
  superuserPassword?: string;
  /** Serve TLS (`ssl=on`) with these certificates; plain connections stay open unless `tlsOnly`. */
  tls?: ClusterTls;
  /**
   * Run this major version of PostgreSQL instead of the default one (the newest, 18): one of
   * `OTHER_MAJOR_VERSIONS` (see postgres-binaries.ts), e.g. the source of a major-version move.
   */
  majorVersion?: (typeof OTHER_MAJOR_VERSIONS)[number];
}

/**
 * A cluster's TLS: its server certificate and key (written `0600`: PostgreSQL refuses a
 * key others can read), the CA bundle it trusts for client certificates, and who logs in how.
 */
export interface ClusterTls {
  /** The server's certificate and private key, PEM. */
  readonly server: { readonly certPem: string; readonly keyPem: string };
  /** CA certificates (PEM, concatenated) that client certificates must chain to (`ssl_ca_file`). */
  readonly clientCa?: string;
  /** Users that log in with `cert` authentication over `hostssl` (certificate CN = user, no password). */
  readonly certUsers?: readonly string[];
  /**
   * Every user but the superuser must use TLS (`hostnossl ... reject`): a connection that
   * got in proves it was encrypted. The harness's superuser keeps plain connections.
   */
  readonly tlsOnly?: boolean;
}

/**
 * Settings of a server an online migration reads from (or writes to): logical WAL, and
 * commits that wait for synchronous standbys as on a production server (the throwaway
 * default turns that off), so the migration's synchronous apply is what a user gets.
 */
export const LOGICAL_REPLICATION_SETTINGS = { wal_level: 'logical', synchronous_commit: 'on' } as const;

/** A connection config for `pg` (what `new pg.Client(config)` takes). */
export interface ConnectionConfig {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

/** Every temp folder this harness creates starts with this, so leftovers can be found. */
export const CLUSTER_DIR_PREFIX = 'hotload-pg-cluster-';
const SUPERUSER = 'postgres';
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 15_000;
/**
 * How long the end-of-suite stop lets sessions finish their own goodbye before it
 * disconnects them (a hang guard for leaked sessions, not a measurement).
 */
const SMART_STOP_GRACE_MS = 2_000;

let binaries: PostgresBinaries | undefined;
const otherBinaries = new Map<number, PostgresBinaries>();
const running = new Set<PostgresCluster>();

/**
 * One throwaway PostgreSQL server: its own data folder in tmpdir, a free loopback port,
 * scram-sha-256 for every connection, and a superuser with a known password.
 *
 * Start one with {@link startCluster}; always `stop()` it (an `exit` hook and the test
 * run's global teardown clean up after crashed tests too).
 */
export class PostgresCluster {
  readonly host = '127.0.0.1';
  #process: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #stopped = false;
  #settings: Readonly<Record<string, string | number | boolean>> = {};

  /** @internal use {@link startCluster} */
  constructor(
    readonly dataDir: string,
    public port: number,
    readonly superuserPassword: string,
    readonly binaries: PostgresBinaries,
    readonly runDir: string,
  ) {}

  /** Superuser connection config, optionally for another database or user. */
  connectionConfig(overrides: Partial<ConnectionConfig> = {}): ConnectionConfig {
    return {
      host: this.host,
      port: this.port,
      user: SUPERUSER,
      password: this.superuserPassword,
      database: 'postgres',
      ...overrides,
    };
  }

  /** `postgres://` URI of {@link connectionConfig}. */
  connectionString(overrides: Partial<ConnectionConfig> = {}): string {
    const c = this.connectionConfig(overrides);
    const auth = `${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}`;
    return `postgres://${auth}@${c.host}:${c.port}/${encodeURIComponent(c.database)}`;
  }

  /** Runs one statement as superuser on a short-lived connection. */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params: unknown[] = [],
    database = 'postgres',
  ): Promise<pg.QueryResult<R>> {
    const client = new pg.Client(this.connectionConfig({ database }));
    await client.connect();
    try {
      return await client.query<R>(sql, params);
    } finally {
      await client.end();
    }
  }

  /** The server's process id, while it runs. */
  get pid(): number | undefined {
    return this.#process?.pid;
  }

  /** Whether the server process is running. */
  get running(): boolean {
    return this.#process !== undefined;
  }

  /** @internal starts the server on the data folder; retries on a port clash. */
  async launch(
    settings: Readonly<Record<string, string | number | boolean>> = this.#settings,
  ): Promise<void> {
    this.#settings = settings;
    const logFile = join(this.runDir, 'server.log');
    const log = openSync(logFile, 'a');
    const args = ['-D', this.dataDir, '-p', String(this.port)];
    for (const [key, value] of Object.entries({ ...FAST_THROWAWAY_SETTINGS, ...settings })) {
      args.push('-c', `${key}=${value}`);
    }
    const child = spawn(join(this.binaries.binDir, 'postgres'), args, {
      stdio: ['ignore', log, log],
      ...this.binaries.runAs,
    });
    closeSync(log);
    this.#process = child;
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined;
    });
    running.add(this);
    await this.#waitUntilReady(child, logFile);
  }

  async #waitUntilReady(child: ChildProcess, logFile: string): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`PostgreSQL exited during start-up:\n${tail(logFile)}`);
      }
      if (await this.#acceptsConnections()) return;
      if (Date.now() > deadline)
        throw new Error(`PostgreSQL not ready after ${READY_TIMEOUT_MS} ms:\n${tail(logFile)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  async #acceptsConnections(): Promise<boolean> {
    const client = new pg.Client({ ...this.connectionConfig(), connectionTimeoutMillis: 1000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.end();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Stops the server and waits for it to exit. `fast` (the default) disconnects clients
   * and shuts down cleanly; `smart` first lets open sessions end on their own (then
   * disconnects what is left, as `fast`); `immediate` is a crash-like stop; `kill` is SIGKILL.
   */
  async shutdown(mode: 'smart' | 'fast' | 'immediate' | 'kill' = 'fast'): Promise<void> {
    const child = this.#process;
    if (!child) return;
    const signal = SHUTDOWN_SIGNALS[mode];
    child.kill(signal);
    const fast = mode === 'smart' ? setTimeout(() => child.kill('SIGINT'), SMART_STOP_GRACE_MS) : undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await this.#exited;
    clearTimeout(fast);
    clearTimeout(timer);
  }

  /** Stops and starts the server again on the same port and data. */
  async restart(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.shutdown(mode);
    await this.launch();
  }

  /**
   * Creates a streaming standby of this (primary) server: a base backup taken with the
   * low-level backup API (the embedded binaries ship no pg_basebackup), a physical
   * replication slot so no WAL it needs is removed, and `standby.signal`.
   */
  async createStandby(): Promise<PostgresCluster> {
    const standby = await prepareCluster({ superuserPassword: this.superuserPassword }, false, this.binaries);
    const slot = `standby_${randomBytes(4).toString('hex')}`;
    try {
      await this.query('SELECT pg_create_physical_replication_slot($1, true)', [slot]);
      await this.#baseBackupInto(standby.dataDir);
      const conninfo = `host=${this.host} port=${this.port} user=${SUPERUSER} password=${this.superuserPassword}`;
      writeFileSync(join(standby.dataDir, 'standby.signal'), '');
      writeFileSync(
        join(standby.dataDir, 'postgresql.auto.conf'),
        `primary_conninfo = '${conninfo}'\nprimary_slot_name = '${slot}'\n`,
      );
      giveToServerUser(standby.runDir, standby.binaries);
      await standby.launch();
      return standby;
    } catch (error) {
      // Leave nothing behind: the half-made standby's folder, and the slot that would
      // otherwise keep WAL on the primary forever.
      await standby.stop();
      await this.query(
        'SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1',
        [slot],
      ).catch(() => {});
      throw error;
    }
  }

  /** Copies the data folder between pg_backup_start and pg_backup_stop, plus its backup_label. */
  async #baseBackupInto(targetDataDir: string): Promise<void> {
    const client = new pg.Client(this.connectionConfig());
    await client.connect();
    try {
      await client.query("SELECT pg_backup_start('hotload-standby', true)");
      copyDataDirectory(this.dataDir, targetDataDir);
      const { rows } = await client.query<{ labelfile: string }>(
        'SELECT labelfile FROM pg_backup_stop(false)',
      );
      writeFileSync(join(targetDataDir, 'backup_label'), rows[0]!.labelfile);
    } finally {
      await client.end();
    }
  }

  /**
   * Replaces the server's certificate and key and/or the client CA bundle, reloads the
   * configuration (SIGHUP, as `pg_reload_conf()`), and waits until a new TLS connection
   * is served the new certificate (the reload is asynchronous). Sessions already open
   * keep the TLS they negotiated.
   */
  async reloadTls(
    tls: Partial<Pick<ClusterTls, 'server' | 'clientCa'>>,
    serverFingerprint?: string,
  ): Promise<void> {
    writeServerTlsFiles(this, tls);
    await this.query('SELECT pg_reload_conf()');
    if (serverFingerprint === undefined) return;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while ((await this.#servedCertificate()) !== serverFingerprint) {
      if (Date.now() > deadline)
        throw new Error(`the server still serves its old certificate after ${READY_TIMEOUT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** SHA-256 fingerprint of the certificate a new TLS connection is served. */
  async #servedCertificate(): Promise<string | undefined> {
    const client = new pg.Client({ ...this.connectionConfig(), ssl: { rejectUnauthorized: false } });
    await client.connect();
    try {
      const socket = (client as unknown as { connection: { stream: TLSSocket } }).connection.stream;
      return socket.getPeerCertificate().fingerprint256;
    } finally {
      await client.end();
    }
  }

  /** Promotes a standby to a primary and waits until it accepts writes. */
  async promote(): Promise<void> {
    await this.query('SELECT pg_promote(true, 60)');
  }

  /**
   * Stops the server and removes its folder. Safe to call more than once. A `smart` stop:
   * `pg.Pool#end()` resolves before its clients' sockets have closed, and a backend a fast
   * stop reaches before the client's goodbye sends it a FATAL that the ended pool, with
   * nobody listening any more, throws as an uncaught 'error' into the test run.
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.shutdown('smart');
    running.delete(this);
    rmSync(this.runDir, { recursive: true, force: true });
  }

  /** @internal last-resort clean-up from a process `exit` hook: synchronous only. */
  killNow(): void {
    this.#process?.kill('SIGKILL');
    rmSync(this.runDir, { recursive: true, force: true });
  }
}

/** postmaster's shutdown signals (see "Shutting Down the Server" in PostgreSQL's docs). */
const SHUTDOWN_SIGNALS = { smart: 'SIGTERM', fast: 'SIGINT', immediate: 'SIGQUIT', kill: 'SIGKILL' } as const;

/**
 * Settings that make a throwaway server start and write fast. Durability is not needed:
 * a cluster never outlives its test.
 */
const FAST_THROWAWAY_SETTINGS = {
  listen_addresses: '127.0.0.1',
  unix_socket_directories: '', // TCP only: no socket file to clean up or collide on
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: 300,
  shared_buffers: '32MB',
  max_wal_senders: 10,
  wal_level: 'replica',
  hot_standby: 'on',
  log_min_messages: 'warning',
};

/** Starts a new throwaway PostgreSQL server. */
export async function startCluster(options: ClusterOptions = {}): Promise<PostgresCluster> {
  for (let attempt = 1; ; attempt++) {
    const cluster = await prepareCluster(options, true);
    try {
      await cluster.launch({ ...(options.tls ? tlsSettings(options.tls) : {}), ...options.settings });
      return cluster;
    } catch (error) {
      await cluster.stop();
      // Another process may grab the free port between our probe and the server's bind.
      if (attempt >= 5 || !String(error).includes('could not bind')) throw error;
    }
  }
}

/** The default binaries, or those of `major`; each located once per process. */
function binariesFor(major: ClusterOptions['majorVersion']): PostgresBinaries {
  if (major === undefined) {
    binaries ??= locatePostgresBinaries();
    return binaries;
  }
  let found = otherBinaries.get(major);
  if (!found) {
    found = locateOtherPostgresBinaries(major);
    otherBinaries.set(major, found);
  }
  return found;
}

async function prepareCluster(
  options: ClusterOptions,
  initialize: boolean,
  chosen: PostgresBinaries = binariesFor(options.majorVersion),
): Promise<PostgresCluster> {
  const runId = process.env.HOTLOAD_TEST_RUN_ID ?? 'adhoc';
  // A standby's folder says so, which makes a leaked one easy to recognise.
  const kind = initialize ? '' : 'standby-';
  const runDir = join(tmpdir(), `${CLUSTER_DIR_PREFIX}${runId}-${kind}${randomBytes(6).toString('hex')}`);
  const dataDir = join(runDir, 'data');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const password = options.superuserPassword ?? randomBytes(18).toString('base64url');
  const cluster = new PostgresCluster(dataDir, await freePort(), password, chosen, runDir);
  try {
    if (initialize) initializeDataDirectory(cluster, password);
    if (initialize && options.tls) configureTls(cluster, options.tls);
  } catch (error) {
    rmSync(runDir, { recursive: true, force: true });
    throw error;
  }
  return cluster;
}

function initializeDataDirectory(cluster: PostgresCluster, password: string): void {
  const passwordFile = join(cluster.runDir, 'superuser-password');
  writeFileSync(passwordFile, password, { mode: 0o600 });
  giveToServerUser(cluster.runDir, cluster.binaries);
  execFileSync(
    join(cluster.binaries.binDir, 'initdb'),
    [
      '-D',
      cluster.dataDir,
      '-U',
      SUPERUSER,
      '--auth=scram-sha-256',
      `--pwfile=${passwordFile}`,
      '-N',
      '-E',
      'UTF8',
      '--locale=C',
    ],
    { stdio: 'pipe', ...cluster.binaries.runAs },
  );
  rmSync(passwordFile);
}

/** File names in the data folder (the server resolves relative paths against it). */
const SERVER_TLS_FILES = { cert: 'server.crt', key: 'server.key', clientCa: 'client-ca.crt' } as const;

function tlsSettings(tls: ClusterTls): Record<string, string> {
  return {
    ssl: 'on',
    ssl_cert_file: SERVER_TLS_FILES.cert,
    ssl_key_file: SERVER_TLS_FILES.key,
    ...(tls.clientCa === undefined ? {} : { ssl_ca_file: SERVER_TLS_FILES.clientCa }),
  };
}

/** Writes the server's TLS files and puts `hostssl` / `cert` rules ahead of initdb's. */
function configureTls(cluster: PostgresCluster, tls: ClusterTls): void {
  writeServerTlsFiles(cluster, tls);
  const rules: string[] = [];
  for (const user of tls.certUsers ?? []) rules.push(`hostssl all ${user} 127.0.0.1/32 cert`);
  if (tls.tlsOnly) {
    rules.push(`host all ${SUPERUSER} 127.0.0.1/32 scram-sha-256`, 'hostnossl all all 127.0.0.1/32 reject');
  }
  const hba = join(cluster.dataDir, 'pg_hba.conf');
  writeFileSync(hba, `${rules.join('\n')}\n${readFileSync(hba, 'utf8')}`);
}

function writeServerTlsFiles(cluster: PostgresCluster, tls: Partial<ClusterTls>): void {
  const write = (name: string, content: string, mode: number): void => {
    const path = join(cluster.dataDir, name);
    writeFileSync(path, content, { mode });
    chmodSync(path, mode);
    if (cluster.binaries.runAs) chownSync(path, cluster.binaries.runAs.uid, cluster.binaries.runAs.gid);
  };
  if (tls.server) {
    write(SERVER_TLS_FILES.cert, tls.server.certPem, 0o644);
    write(SERVER_TLS_FILES.key, tls.server.keyPem, 0o600);
  }
  if (tls.clientCa !== undefined) write(SERVER_TLS_FILES.clientCa, tls.clientCa, 0o644);
}

function giveToServerUser(path: string, bins: PostgresBinaries): void {
  if (!bins.runAs) return;
  const { uid, gid } = bins.runAs;
  chownSync(path, uid, gid);
  for (const entry of readdirSync(path, { recursive: true, withFileTypes: false }) as string[]) {
    chownSync(join(path, entry), uid, gid);
  }
}

/** Copies a data folder for a base backup, leaving out what a standby must not inherit. */
function copyDataDirectory(from: string, to: string): void {
  const skipped = new Set(['postmaster.pid', 'postmaster.opts']);
  const emptied = new Set(['pg_wal', 'pg_replslot', 'pg_stat_tmp']);
  cpSync(from, to, {
    recursive: true,
    filter: (source) => {
      const relative = source.slice(from.length + 1);
      const [top, ...rest] = relative.split('/');
      if (skipped.has(relative)) return false;
      return !(top && emptied.has(top) && rest.length > 0);
    },
  });
  mkdirSync(join(to, 'pg_wal', 'archive_status'), { recursive: true });
}

/** A TCP port free on loopback right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no server log)';
  }
}

// A test that crashes or a worker that exits early must not leave servers behind.
process.once('exit', () => {
  for (const cluster of running) cluster.killNow();
});
