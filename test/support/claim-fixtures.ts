/** Test helpers of the claim reconciler and controller: temp folders, config and claim files, logins from published secrets. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseReconcilerConfig, type ReconcilerConfig } from 'hotload-claim-reconciler';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import {
  type ClusterOptions,
  LOGICAL_REPLICATION_SETTINGS,
  type PostgresCluster,
  startCluster,
} from './postgres-cluster.js';

/** A temp folder removed by `cleanup()`. */
export async function tempDir(
  prefix = 'claim-reconciler-',
): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

/** Writes the superuser password of `cluster` to a file and returns its path. */
export async function writeMasterPassword(
  dir: string,
  cluster: PostgresCluster,
  name = 'master-password',
): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, `${cluster.superuserPassword}\n`, { mode: 0o600 });
  return file;
}

/**
 * What most suites start with: a fresh cluster, a temp work folder holding its master
 * password, and a reconciler config with the one fragment key `label` for that cluster,
 * written to `config.yaml` in the work folder (`configText` is its YAML).
 */
export async function startReconcilerCluster(label = 'atlas'): Promise<{
  cluster: PostgresCluster;
  work: { path: string; cleanup: () => Promise<void> };
  configFile: string;
  configText: string;
}> {
  const { clusters, ...rest } = await startReconcilerInstances({ [label]: {} });
  return { cluster: clusters[label]!, ...rest };
}

/**
 * {@link startReconcilerCluster} for several instances: one fresh cluster per fragment key
 * (started with that key's options, e.g. `wal_level=logical` for online moves), each with
 * its own master password file, all in one `config.yaml`. On a failure nothing is left running.
 */
export async function startReconcilerInstances<K extends string>(
  instances: Record<K, ClusterOptions>,
): Promise<{
  clusters: Record<K, PostgresCluster>;
  work: { path: string; cleanup: () => Promise<void> };
  configFile: string;
  configText: string;
}> {
  const labels = Object.keys(instances) as K[];
  const started = await Promise.allSettled(labels.map((label) => startCluster(instances[label])));
  const clusters = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  let work: { path: string; cleanup: () => Promise<void> } | undefined;
  try {
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    work = await tempDir();
    const dir = work.path;
    const fragments = Object.fromEntries(
      await Promise.all(
        labels.map(async (label, i) => {
          const cluster = clusters[i]!;
          const passwordFile = await writeMasterPassword(dir, cluster, `master-password-${i}`);
          return [label, { cluster, passwordFile }] as const;
        }),
      ),
    );
    const configText = configYaml(fragments);
    const configFile = join(dir, 'config.yaml');
    await writeFile(configFile, configText);
    const byLabel = Object.fromEntries(labels.map((label, i) => [label, clusters[i]!])) as Record<
      K,
      PostgresCluster
    >;
    return { clusters: byLabel, work, configFile, configText };
  } catch (error) {
    await Promise.all(clusters.map((cluster) => cluster.stop()));
    await work?.cleanup();
    throw error;
  }
}

/**
 * Replication objects a move or seed left: slots and `hotload_mig_%` logins on `source`,
 * publications in `database` there (0 once that database is gone), subscriptions on `target`.
 */
export async function replicationLeftovers(
  source: PostgresCluster,
  target: PostgresCluster,
  database: string,
): Promise<Record<'slots' | 'logins' | 'publications' | 'subscriptions', number>> {
  const count = async (cluster: PostgresCluster, sql: string, db = 'postgres', params: unknown[] = []) => {
    const client = new pg.Client(cluster.connectionConfig({ database: db }));
    await client.connect();
    try {
      return (await client.query(sql, params)).rows.length;
    } finally {
      await client.end();
    }
  };
  const databaseExists =
    (await count(source, 'SELECT 1 FROM pg_database WHERE datname = $1', 'postgres', [database])) === 1;
  return {
    slots: await count(source, 'SELECT 1 FROM pg_replication_slots'),
    logins: await count(source, `SELECT 1 FROM pg_roles WHERE rolname LIKE 'hotload_mig_%'`),
    publications: databaseExists ? await count(source, 'SELECT 1 FROM pg_publication', database) : 0,
    subscriptions: await count(target, 'SELECT 1 FROM pg_subscription'),
  };
}

/** Two instances for online moves and seeds, as {@link startLogicalPair} starts them. */
export interface LogicalPair {
  /** Fragment key `atlas`. */
  readonly a: PostgresCluster;
  /** Fragment key `atlas.recyclebin`. */
  readonly b: PostgresCluster;
  readonly work: { path: string; cleanup: () => Promise<void> };
  /** The config naming both, after `preamble` (e.g. a `migration:` block). */
  readonly config: ReconcilerConfig;
}

/** Starts `atlas` and `atlas.recyclebin` with `wal_level=logical`, the move and seed tests' pair. */
export async function startLogicalPair(preamble = ''): Promise<LogicalPair> {
  const logical = { settings: LOGICAL_REPLICATION_SETTINGS };
  const { clusters, work, configFile, configText } = await startReconcilerInstances({
    atlas: logical,
    'atlas.recyclebin': logical,
  });
  const { atlas: a, 'atlas.recyclebin': b } = clusters;
  return { a, b, work, config: parseReconcilerConfig(`${preamble}${configText}`, configFile) };
}

/** A suite's reconciler cluster (see {@link useReconcilerCluster}). */
export interface ReconcilerSuite {
  readonly cluster: PostgresCluster;
  readonly work: { path: string; cleanup: () => Promise<void> };
  readonly configFile: string;
  readonly configText: string;
  /** `configText` parsed. */
  readonly config: ReconcilerConfig;
}

/**
 * Registers the calling suite's `beforeAll` ({@link startReconcilerCluster}) and `afterAll`
 * (stop the cluster, remove the work folder). The returned object's fields are readable
 * once `beforeAll` has run, i.e. in tests and later hooks.
 */
export function useReconcilerCluster(label?: string): ReconcilerSuite {
  let started: Awaited<ReturnType<typeof startReconcilerCluster>> | undefined;
  let config: ReconcilerConfig | undefined;
  beforeAll(async () => {
    started = await startReconcilerCluster(label); // set first: afterAll cleans up if parsing throws
    config = parseReconcilerConfig(started.configText, started.configFile);
  });
  afterAll(async () => {
    await started?.cluster.stop();
    await started?.work.cleanup();
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('useReconcilerCluster: read before its beforeAll ran');
    return value;
  };
  return {
    get cluster() {
      return ready(started).cluster;
    },
    get work() {
      return ready(started).work;
    },
    get configFile() {
      return ready(started).configFile;
    },
    get configText() {
      return ready(started).configText;
    },
    get config() {
      return ready(config);
    },
  };
}

/** Config YAML with one fragment key per entry. */
export function configYaml(
  fragments: Record<string, { cluster: PostgresCluster; passwordFile: string; deletionPolicy?: string }>,
  extra = '',
): string {
  const keys = Object.entries(fragments).map(
    ([label, f]) =>
      `${label}:\n  host: ${f.cluster.host}\n  port: ${f.cluster.port}\n  username: postgres\n  sslMode: disable\n  passwordFile: ${f.passwordFile}\n${f.deletionPolicy ? `  deletionPolicy: ${f.deletionPolicy}\n` : ''}`,
  );
  return `passwordConfig:\n  passwordComplexity: enabled\n  minPasswordLength: "20"\n  passwordRotationPeriod: "60"\n${extra}${keys.join('')}`;
}

/** A DatabaseClaim document. */
export function claimYaml(
  name: string,
  spec: Record<string, string | number>,
  namespace = 'default',
): string {
  const lines = Object.entries(spec).map(
    ([k, v]) => `  ${k}: ${typeof v === 'number' ? v : JSON.stringify(v)}`,
  );
  return `apiVersion: persistance.atlas.infoblox.com/v1\nkind: DatabaseClaim\nmetadata:\n  name: ${name}\n  namespace: ${namespace}\nspec:\n${lines.join('\n')}\n`;
}

/** Reads a published secret folder's files (through the `..data` symlinks). */
export async function readSecret(dir: string): Promise<Record<string, string>> {
  const keys = ['hostname', 'port', 'database', 'username', 'password', 'sslmode', 'dsn.txt', 'uri_dsn.txt'];
  const out: Record<string, string> = {};
  for (const key of keys) out[key] = await readFile(join(dir, key), 'utf8');
  return out;
}

/** Connects with the published `uri_dsn.txt`, runs `work`, closes. */
export async function withSecretClient<T>(dir: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const uri = await readFile(join(dir, 'uri_dsn.txt'), 'utf8');
  const client = new pg.Client({ connectionString: uri });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Tries a login with explicit credentials; resolves true when `SELECT 1` works. */
export async function canLogin(
  cluster: PostgresCluster,
  user: string,
  password: string,
  database: string,
): Promise<boolean> {
  const client = new pg.Client({ host: cluster.host, port: cluster.port, user, password, database });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Roles whose names start with `prefix`, sorted. */
export async function rolesLike(cluster: PostgresCluster, prefix: string): Promise<string[]> {
  const { rows } = await cluster.query<{ rolname: string }>(
    'SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1) ORDER BY 1',
    [prefix],
  );
  return rows.map((r) => r.rolname);
}
