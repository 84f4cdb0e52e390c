/** Test helpers: temp folders, config and claim files, logins from published secrets. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type PostgresCluster, startCluster } from 'hotload-test-support';
import pg from 'pg';

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
  const cluster = await startCluster();
  let work: { path: string; cleanup: () => Promise<void> } | undefined;
  try {
    work = await tempDir();
    const passwordFile = await writeMasterPassword(work.path, cluster);
    const configText = configYaml({ [label]: { cluster, passwordFile } });
    const configFile = join(work.path, 'config.yaml');
    await writeFile(configFile, configText);
    return { cluster, work, configFile, configText };
  } catch (error) {
    await cluster.stop();
    await work?.cleanup();
    throw error;
  }
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
