/**
 * A REAL Kubernetes control plane for tests, as controller-runtime's envtest starts one:
 * etcd on fresh data, kube-apiserver serving TLS with `--authorization-mode=RBAC`, a
 * service-account issuer and signing key (TokenRequest works), an audit log, and, when its
 * binary is there, kube-controller-manager running only the garbage collector and the
 * namespace controller. The binaries come from `scripts/control-plane.mjs`
 * (`KUBEBUILDER_ASSETS`, or built from Kubernetes' Go modules).
 *
 * The tests' own setup acts as an admin (a static token in `system:masters`); the controller
 * under test never does: it gets a ServiceAccount token ({@link KubeControlPlane.serviceAccountToken}).
 * Start with {@link startControlPlane}; always `stop()` (an `exit` hook kills what is left).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
// @ts-expect-error: a plain .mjs script (no declarations); the shapes are typed below.
import { locateControlPlane as locate } from '../../scripts/control-plane.mjs';
import { apiRequest } from './kube-objects.js';
import { freePort } from './postgres-cluster.js';

/** Where the control-plane binaries are, or why there are none. */
export type ControlPlaneLocation =
  | { readonly dir: string; readonly source: 'KUBEBUILDER_ASSETS' | 'cache' }
  | { readonly missing: string };

/** Finds the binaries (builds nothing: `npm test` builds them before the run). */
export function locateControlPlane(): ControlPlaneLocation {
  return (locate as () => ControlPlaneLocation)();
}

/** Folder names of control planes start with this, then the test run id. */
export const CONTROL_PLANE_DIR_PREFIX = 'hotload-kube-';

/** How long start-up may take before it is a failure (a cold apiserver takes ~10 s). */
const START_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 10_000;

/** Options of {@link startControlPlane}. */
export interface ControlPlaneOptions {
  /**
   * kube-apiserver's watch cache; default true (as in a cluster). With false, watches are
   * served by etcd itself, so a watch from a version etcd compacted away gets `410 Gone`
   * exactly as after a real compaction (the cache would keep serving from its window).
   */
  readonly watchCache?: boolean;
  /**
   * kube-apiserver's `--min-request-timeout`: watches end (cleanly) after this to twice this
   * many seconds and clients re-watch from their last resourceVersion. Default: the
   * server's (1800 s).
   */
  readonly minRequestTimeoutSeconds?: number;
}

const running = new Set<KubeControlPlane>();

/** One running control plane. */
export class KubeControlPlane {
  /** `https://127.0.0.1:<port>` of kube-apiserver. */
  readonly url: string;
  /** etcd's client URL (plain HTTP on loopback; its JSON gateway serves `/v3/kv/...`). */
  readonly etcdUrl: string;
  /** The folder holding data, certificates, kubeconfigs and logs. */
  readonly dir: string;
  /** PEM of the CA that signed the apiserver's serving certificate. */
  readonly caPem: string;
  /** A kubeconfig file with admin rights, for kubectl. */
  readonly adminKubeconfigFile: string;
  /** The apiserver's audit log (JSON lines, one per request at Metadata level). */
  readonly auditLogFile: string;
  #controllerManager = false;
  /** The binaries' folder. */
  readonly binDir: string;
  readonly #adminToken: string;
  readonly #processes: ChildProcess[];

  /** @internal use {@link startControlPlane} */
  constructor(fields: {
    url: string;
    etcdUrl: string;
    dir: string;
    caPem: string;
    adminToken: string;
    adminKubeconfigFile: string;
    auditLogFile: string;
    binDir: string;
    processes: ChildProcess[];
  }) {
    this.url = fields.url;
    this.etcdUrl = fields.etcdUrl;
    this.dir = fields.dir;
    this.caPem = fields.caPem;
    this.#adminToken = fields.adminToken;
    this.adminKubeconfigFile = fields.adminKubeconfigFile;
    this.auditLogFile = fields.auditLogFile;
    this.binDir = fields.binDir;
    this.#processes = fields.processes;
    running.add(this);
  }

  /** Whether kube-controller-manager runs (so garbage collection happens). */
  get garbageCollector(): boolean {
    return this.#controllerManager;
  }

  /**
   * Starts kube-controller-manager with only the controllers the tests rely on: ownerReference
   * garbage collection and namespace deletion. Started after the CRDs are Established, so
   * the collector's first discovery includes them (it re-discovers only every 30 s).
   * Resolves false when there is no binary (envtest's assets have none).
   */
  startControllerManager(): boolean {
    if (this.#controllerManager) return true;
    const binary = join(this.binDir, 'kube-controller-manager');
    if (!existsSync(binary)) return false;
    this.#processes.push(
      launch(
        binary,
        [
          `--kubeconfig=${this.adminKubeconfigFile}`,
          '--controllers=garbagecollector,namespace',
          '--leader-elect=false',
          '--secure-port=0',
          '--concurrent-gc-syncs=5',
        ],
        join(this.dir, 'kube-controller-manager.log'),
      ),
    );
    this.#controllerManager = true;
    return true;
  }

  /** A KubeConfig with admin rights (the test's own setup and checks). */
  adminConfig(): KubeConfig {
    return this.configFor('admin', this.#adminToken);
  }

  /** A KubeConfig that authenticates with `token` (e.g. a ServiceAccount's) against {@link url}. */
  configFor(user: string, token: string, server = this.url): KubeConfig {
    return tokenConfig(server, this.caPem, user, token);
  }

  /** Writes `config` as a kubeconfig file in the control plane's folder; returns its path. */
  writeKubeconfig(name: string, config: KubeConfig): string {
    const file = join(this.dir, `${name}.kubeconfig`);
    writeFileSync(file, config.exportConfig(), { mode: 0o600 });
    return file;
  }

  /**
   * A token of ServiceAccount `namespace/name` from the TokenRequest API (as the kubelet
   * mounts one), valid for `seconds`.
   */
  async serviceAccountToken(namespace: string, name: string, seconds = 3600): Promise<string> {
    const answer = (await apiRequest(
      this.adminConfig(),
      'POST',
      `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`,
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: seconds } },
    )) as { status?: { token?: string } };
    if (!answer.status?.token) throw new Error(`TokenRequest for ${namespace}/${name}: no token`);
    return answer.status.token;
  }

  /**
   * Compacts etcd at its current revision, as kube-apiserver's periodic compaction does:
   * a watch from any older resourceVersion then gets `410 Gone`.
   */
  async compact(): Promise<number> {
    const range = await fetch(`${this.etcdUrl}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key: Buffer.from('/').toString('base64') }),
    });
    const revision = Number(((await range.json()) as { header: { revision: string } }).header.revision);
    const compaction = await fetch(`${this.etcdUrl}/v3/kv/compaction`, {
      method: 'POST',
      body: JSON.stringify({ revision: String(revision), physical: true }),
    });
    if (!compaction.ok) throw new Error(`etcd compaction: ${compaction.status} ${await compaction.text()}`);
    return revision;
  }

  /**
   * The audit log's entries once every request answered before this call is in it: the
   * apiserver writes an entry just after the response, so a test that saw the effect of a
   * request may read the log a moment before its entry. This makes a marker request and
   * waits for the marker's entry (written after the earlier ones).
   */
  async settledAuditEntries(): Promise<AuditEntry[]> {
    const marker = `audit-marker-${randomBytes(6).toString('hex')}`;
    await apiRequest(this.adminConfig(), 'GET', `/api/v1/namespaces/${marker}`).catch(() => {}); // a 404
    const deadline = Date.now() + 10_000;
    for (;;) {
      const entries = this.auditEntries();
      if (entries.some((entry) => entry.objectRef?.name === marker)) return entries;
      if (Date.now() > deadline)
        throw new Error('the audit log did not record the marker request within 10 s');
      // A file append has no event to wait for (fs.watch is unreliable across platforms).
      await sleep(20);
    }
  }

  /** The audit log's entries so far (`verb`, `requestURI`, `user.username`, `responseStatus.code`, ...). */
  auditEntries(): AuditEntry[] {
    let text: string;
    try {
      text = readFileSync(this.auditLogFile, 'utf8');
    } catch {
      return [];
    }
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as AuditEntry);
  }

  /** Runs kubectl as admin; resolves with its output, rejects with its stderr on failure. */
  kubectl(
    args: readonly string[],
    input?: string,
  ): Promise<{ stdout: string; stderr: string; code: number }> {
    return runProcess(
      join(this.binDir, 'kubectl'),
      ['--kubeconfig', this.adminKubeconfigFile, ...args],
      input,
    );
  }

  /** Stops every process (SIGTERM, then SIGKILL) and removes the folder. */
  async stop(): Promise<void> {
    running.delete(this);
    for (const child of [...this.#processes].reverse()) await stopProcess(child);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** @internal synchronous last resort from the `exit` hook. */
  killNow(): void {
    for (const child of this.#processes) child.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One line of the apiserver's audit log (the fields tests read). */
export interface AuditEntry {
  readonly stage: string;
  /** When the stage was reached (RFC 3339, microseconds). */
  readonly stageTimestamp?: string;
  readonly verb: string;
  readonly requestURI: string;
  readonly user: { readonly username: string; readonly groups?: string[] };
  readonly objectRef?: {
    readonly resource?: string;
    readonly namespace?: string;
    readonly name?: string;
    readonly subresource?: string;
  };
  readonly responseStatus?: { readonly code: number };
}

/**
 * Starts etcd, kube-apiserver and (unless disabled or absent) kube-controller-manager on
 * free loopback ports. Throws when the binaries are missing: callers check
 * {@link locateControlPlane} first and skip with its reason.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<KubeControlPlane> {
  const located = locateControlPlane();
  if ('missing' in located) throw new Error(`no control plane: ${located.missing}`);
  const binDir = located.dir;
  const runId = process.env.HOTLOAD_TEST_RUN_ID ?? 'manual';
  const dir = mkdtempSync(join(tmpdir(), `${CONTROL_PLANE_DIR_PREFIX}${runId}-`));
  const processes: ChildProcess[] = [];
  const pending = { dir, processes };
  startingUp.add(pending);
  try {
    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const etcd = launch(join(binDir, 'etcd'), etcdArgs(dir, etcdUrl, peerPort), join(dir, 'etcd.log'));
    processes.push(etcd);
    await waitFor(`etcd (${join(dir, 'etcd.log')})`, etcd, async () => (await fetch(`${etcdUrl}/health`)).ok);

    const adminToken = randomBytes(24).toString('hex');
    const files = writeApiServerFiles(dir, adminToken);
    const url = `https://127.0.0.1:${apiPort}`;
    const apiserver = launch(
      join(binDir, 'kube-apiserver'),
      [
        ...apiServerArgs(dir, files, etcdUrl, apiPort),
        ...(options.watchCache === false ? ['--watch-cache=false'] : []),
        ...(options.minRequestTimeoutSeconds
          ? [`--min-request-timeout=${options.minRequestTimeoutSeconds}`]
          : []),
      ],
      join(dir, 'kube-apiserver.log'),
    );
    processes.push(apiserver);
    // The serving certificate is self-signed by the apiserver into --cert-dir at start-up.
    let caPem = '';
    await waitFor(`kube-apiserver (${join(dir, 'kube-apiserver.log')})`, apiserver, async () => {
      caPem ||= readFileIfPresent(join(dir, 'pki', 'apiserver.crt'));
      if (!caPem) return false;
      await apiRequest(tokenConfig(url, caPem, 'admin', adminToken), 'GET', '/readyz');
      return true;
    });
    const adminConfig = tokenConfig(url, caPem, 'admin', adminToken);
    const adminKubeconfigFile = join(dir, 'admin.kubeconfig');
    writeFileSync(adminKubeconfigFile, adminConfig.exportConfig(), { mode: 0o600 });

    return new KubeControlPlane({
      url,
      etcdUrl,
      dir,
      caPem,
      adminToken,
      adminKubeconfigFile,
      auditLogFile: files.auditLog,
      binDir,
      processes,
    });
  } catch (error) {
    for (const child of [...processes].reverse()) await stopProcess(child);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  } finally {
    startingUp.delete(pending);
  }
}

function etcdArgs(dir: string, clientUrl: string, peerPort: number): string[] {
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  return [
    '--name=test',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=test=${peerUrl}`,
    // Test data: durability across a power cut is not needed; speed on a busy disk is.
    '--unsafe-no-fsync',
    '--log-level=warn',
  ];
}

interface ApiServerFiles {
  readonly tokens: string;
  readonly saPrivate: string;
  readonly saPublic: string;
  readonly auditPolicy: string;
  readonly auditLog: string;
}

function writeApiServerFiles(dir: string, adminToken: string): ApiServerFiles {
  mkdirSync(join(dir, 'pki'), { recursive: true });
  const files: ApiServerFiles = {
    tokens: join(dir, 'pki', 'tokens.csv'),
    saPrivate: join(dir, 'pki', 'sa.key'),
    saPublic: join(dir, 'pki', 'sa.pub'),
    auditPolicy: join(dir, 'audit-policy.yaml'),
    auditLog: join(dir, 'audit.log'),
  };
  // The test's admin: a static token in system:masters (the controller never gets it).
  writeFileSync(files.tokens, `${adminToken},admin,admin,"system:masters"\n`, { mode: 0o600 });
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  writeFileSync(files.saPrivate, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(files.saPublic, publicKey.export({ type: 'spki', format: 'pem' }));
  // One line per request, at the end (ResponseComplete), without bodies: Secrets stay out.
  writeFileSync(
    files.auditPolicy,
    [
      'apiVersion: audit.k8s.io/v1',
      'kind: Policy',
      'omitStages: [RequestReceived]',
      'rules:',
      '  - level: Metadata',
      '',
    ].join('\n'),
  );
  return files;
}

function apiServerArgs(dir: string, files: ApiServerFiles, etcdUrl: string, port: number): string[] {
  return [
    `--etcd-servers=${etcdUrl}`,
    `--secure-port=${port}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--cert-dir=${join(dir, 'pki')}`,
    '--authorization-mode=RBAC',
    // Off by default, on in many distributions: setting blockOwnerDeletion then needs
    // `update` on the owner's finalizers, which deploy/02-rbac.yaml grants for that reason.
    '--enable-admission-plugins=OwnerReferencesPermissionEnforcement',
    `--token-auth-file=${files.tokens}`,
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${files.saPublic}`,
    `--service-account-signing-key-file=${files.saPrivate}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    `--audit-policy-file=${files.auditPolicy}`,
    `--audit-log-path=${files.auditLog}`,
    '--audit-log-mode=blocking',
    // Compaction is the tests' to trigger (KubeControlPlane.compact), not a 5-minute timer.
    '--etcd-compaction-interval=0',
  ];
}

function launch(binary: string, args: string[], logFile: string): ChildProcess {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // For the run's leftover check (global-setup): which processes a folder left behind had.
  if (child.pid !== undefined) writeFileSync(join(dirname(logFile), 'pids'), `${child.pid}\n`, { flag: 'a' });
  const chunks: Buffer[] = [];
  const keep = (chunk: Buffer) => {
    chunks.push(chunk);
    writeFileSync(logFile, chunk, { flag: 'a' });
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return child;
}

async function waitFor(what: string, child: ChildProcess, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited during start-up (${child.exitCode ?? child.signalCode})`);
    }
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready after ${START_TIMEOUT_MS / 1000} s`);
    // Polling: neither etcd nor kube-apiserver announces readiness other than on /health, /readyz.
    await sleep(100);
  }
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

function readFileIfPresent(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** A KubeConfig for `server` (trusting only `caPem`) that authenticates with a bearer token. */
function tokenConfig(server: string, caPem: string, user: string, token: string): KubeConfig {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'test', server, caData: Buffer.from(caPem).toString('base64') }],
    users: [{ name: user, token }],
    contexts: [{ name: 'test', cluster: 'test', user }],
    currentContext: 'test',
  });
  return config;
}

/** Runs a process to its end, collecting its output. */
export async function runProcess(
  binary: string,
  args: readonly string[],
  input?: string,
): Promise<{ stdout: string; stderr: string; code: number }> {
  const child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end(input ?? '');
  const { stdout, stderr, code } = await processOutput(child);
  return { stdout, stderr, code: code ?? 1 };
}

/** What a process printed and how it ended, once it has closed. */
export interface ProcessOutput {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Collects `child`'s stdout and stderr until it closes. */
export function processOutput(child: {
  stdout: NodeJS.ReadableStream;
  stderr: NodeJS.ReadableStream;
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'close', listener: (code: number | null, signal: NodeJS.Signals | null) => void): unknown;
}): Promise<ProcessOutput> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ stdout, stderr, code, signal }));
  });
}

const startingUp = new Set<{ dir: string; processes: ChildProcess[] }>();

// A test that crashes or a worker that exits early must not leave servers behind.
process.once('exit', () => {
  for (const plane of running) plane.killNow();
  for (const { dir, processes } of startingUp) {
    for (const child of processes) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
