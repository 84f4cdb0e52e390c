/**
 * The Kubernetes controller with 1,000 DatabaseClaims on the REAL control plane (etcd and
 * kube-apiserver from the test harness, deploy/'s CRD and RBAC applied by kubectl; the
 * controller authenticates as its ServiceAccount, never admin) and a real PostgreSQL: time
 * from the first claim created to every claim Ready (database, users, verified login,
 * Secret, status), the controller's API requests per claim by verb (from the apiserver's
 * audit log, that user only), the bench process's RSS, and, measured beside it, a
 * folder-mode pass over the same number of claims and the floor.
 *
 * The claims are created by the admin client, CREATE_CONCURRENCY at a time, in NAMESPACES
 * namespaces made before the clock starts. kube-controller-manager is not started: nothing
 * is deleted, so its garbage collector would only compete for the cores. To say where the
 * time goes, it also prints worker-seconds inside the reconcile core (SQL) and inside the
 * Secret calls, server-side latency of the controller's requests, and the CPU seconds of
 * the bench process and of each server process. CLAIMS=<n> runs another size.
 *
 * The floor (issue 29.4): the writing statements the run's first phase issued (CREATE ROLE,
 * COMMENT, CREATE DATABASE, ALTER ROLE in their transactions), captured from the server's
 * log (`log_min_duration_statement = 0` on every cluster: a log line per statement),
 * replayed by WORKERS connections on a fresh cluster with nothing else (no reads, no login
 * check, no Secret, no status). Goal: each mode ≤ 1.5 × the floor.
 *
 * Rounds: on 2 cores shared with four other engineers, the floor alone moved 51-133 s
 * between phases minutes apart in one run (and its CPU seconds 55-177 for the same
 * statements): only a floor measured beside a phase compares with it. So a run is ROUNDS
 * (default 2) rounds of [controller, folder pass, floor] (FOLDER=0: no folder pass;
 * FLOOR_ONLY=1: folder pass and floor, no control plane), the order reversed every other
 * round, each phase on a fresh cluster (and control plane) started with the same settings
 * after `sync`. The `floor` line gives, per mode, per-round wall ratios, the ratio of the
 * means, and CPU-second ratios (bench process + PostgreSQL + kube-apiserver + etcd: every
 * phase is CPU-bound, PSI CPU stall 83-99 % of its wall time); each phase's load average at
 * its start, PSI CPU/IO stall seconds, CPU seconds by process, CREATE DATABASE concurrency
 * and wait events, checkpoints and WAL; `settings_differ` names any server setting a mode's
 * cluster does not share with the floor's (none). The controller's other lines (requests,
 * no-op resync, worker-seconds) are its first round's.
 *
 * `CLAIMS=1000 ROUNDS=2 node --import tsx bench/controller-1000.bench.ts` (945970d, 10:50-11:16
 * UTC, beside a valgrind and a qps bench of other engineers), phases in the order run, load
 * average at each start: controller 89.3 s (8.5), folder 116.2 s (7.8), floor 51.1 s (7.5) |
 * floor 132.8 s (9.3), folder 65.2 s (7.1), controller 112.7 s (6.6).
 * Controller: 1.10x the floor by the means (rounds 1.75, 0.85); CPU 1.19x (98.1 vs 54.9 and
 * 177.1 vs 176.9 s: rounds 1.79, 1.00). Folder pass: 0.99x (rounds 2.28, 0.49); CPU 0.89x.
 * Where the controller's time beyond the floor went, round 1 (floor fast): CPU +43 s, of
 * which PostgreSQL +11.7 (65.7 vs 54.0: the login checks' sessions, 4 SELECTs and the lock a
 * claim), kube-apiserver 14.6 + etcd 3.2, bench process 14.6 (vs 0.9: the controller, the
 * reconciler's pg and SCRAM work, and the bench creating and watching the claims). Wall:
 * 714 worker-seconds (8 x 89.3), CREATE DATABASE 404 s of them (server time; 380 ms a claim
 * in the floor), the reconcile core 673 (Secret API 25), outside it 41 (finalizer, status,
 * record, Event: 4.6 %; 6.8 % in the last run before these cuts); CREATE DATABASE ran 5.6 at a time against
 * the floor's 7.5: a worker spends about a third of its time off the database (round trips,
 * the login check, CPU queueing on a load of 8). 5 API requests a claim (create 3, update 2),
 * 1 reconcile to Ready, no request in the no-op resync.
 * Again, `CLAIMS=1000 ROUNDS=3 FOLDER=0` (same code, 11:17-11:37): controller 87.5 s (load
 * 3.4), floor 66.6 (6.1) | floor 118.8 (6.5), controller 73.6 (5.7) | controller 103.4
 * (5.6), floor 110.8 (6.3): 0.89x by the means (rounds 1.31, 0.62, 0.93), CPU 0.84x (1.16,
 * 0.61, 0.92). The controller's PostgreSQL spent less CPU than the floor's on the same
 * statements (77-126 against 94-196 s): the floor keeps 7.6-7.8 CREATE DATABASE running at
 * once on 2 cores, the controller 5.3-6.2, and contention inflates CPU time too.
 * FLOOR_ONLY figures of the folder mode (before the login check lost its SELECT 1): passes
 * 1.55x, 1.53x and 1.02x the floors by the means, rounds from 0.46 to 2.27.
 *
 * Needs built packages and the control-plane binaries (`node scripts/control-plane.mjs`);
 * without them it prints a `not-run` line (fails with HOTLOAD_REQUIRE_CONTROL_PLANE=1).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CLAIM_GROUP,
  CLAIM_PLURAL,
  CLAIM_VERSION,
  ClaimController,
  DEFAULT_PUBLISHER_ID,
  type KeyReconciled,
  kubeClients,
} from 'hotload-claim-controller';
import {
  type ClaimOutcome,
  type ClaimPorts,
  type ClaimReconcile,
  type ClaimReconcilePort,
  ClaimReconciler,
  type DatabaseClaim,
  parseClaims,
  parseReconcilerConfig,
  Reconciler,
  type SecretSink,
  type Step,
} from 'hotload-claim-reconciler';
import {
  type AuditEntry,
  CLAIM_RESOURCE,
  CONTROLLER_SERVICE_ACCOUNT,
  type KubeChange,
  type KubeControlPlane,
  KubeObjects,
  locateControlPlane,
  type PostgresCluster,
  startCluster,
  startKubeTestBed,
} from 'hotload-test-support';
import pg from 'pg';
import { type PhaseConditions, settleDisk, watchConditions } from './support/machine-conditions.js';
import {
  type ServerActivity,
  serverSettings,
  settingsDiffer,
  watchServer,
} from './support/server-activity.js';

const CLAIMS = Number(process.env.CLAIMS ?? 1000);
/** Whether the controller keeps its second record of each claim (a ConfigMap per claim), as the CLI does. */
const RECORDS = process.env.RECORDS !== '0';
const WORKERS = 8;
const NAMESPACES = 10;
const CREATE_CONCURRENCY = 16;
/** After all Ready, the controller counts as settled once it reconciled nothing for this long. */
const SETTLE_MILLIS = 2000;
const RSS_SAMPLE_MILLIS = 100;
/** Give up (and say how far it got) when not every claim is Ready by then. */
const TIMEOUT_SECONDS = Number(process.env.TIMEOUT_SECONDS ?? 1800);
const CONTROLLER_USER = `system:serviceaccount:${CONTROLLER_SERVICE_ACCOUNT.namespace}:${CONTROLLER_SERVICE_ACCOUNT.name}`;
const MB = 1024 * 1024;

const namespaceOf = (i: number) => `team-${i % NAMESPACES}`;
const round = (value: number, digits = 2) => Number(value.toFixed(digits));

async function configFor(cluster: PostgresCluster, work: string) {
  const passwordFile = join(work, `master-${cluster.port}`);
  await writeFile(passwordFile, cluster.superuserPassword, { mode: 0o600 });
  return parseReconcilerConfig(
    `bench:\n  host: ${cluster.host}\n  port: ${cluster.port}\n  username: postgres\n  passwordFile: ${passwordFile}\n`,
    join(work, 'config.yaml'),
  );
}

/** Adds up how long calls took (milliseconds, summed over the workers running them). */
class Stopwatch {
  millis = 0;
  calls = 0;

  async time<T>(work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.millis += performance.now() - started;
      this.calls++;
    }
  }
}

/** A {@link SecretSink} whose Kubernetes calls are timed (not `lock`: it wraps SQL work). */
class TimedSink implements SecretSink {
  constructor(
    private readonly sink: SecretSink,
    private readonly watch: Stopwatch,
  ) {}

  get location(): string {
    return this.sink.location;
  }
  read() {
    return this.watch.time(() => this.sink.read());
  }
  publishedAt() {
    return this.watch.time(() => this.sink.publishedAt());
  }
  differs(...args: Parameters<SecretSink['differs']>) {
    return this.watch.time(() => this.sink.differs(...args));
  }
  publish(...args: Parameters<SecretSink['publish']>) {
    return this.watch.time(() => this.sink.publish(...args));
  }
  stale() {
    return this.watch.time(() => this.sink.stale());
  }
  sweep() {
    return this.watch.time(() => this.sink.sweep());
  }
  remove() {
    return this.watch.time(() => this.sink.remove());
  }
  lock<T>(work: () => Promise<T>): Promise<T> {
    return this.sink.lock(work);
  }
}

/** The controller's reconcile port, timed: the whole reconcile core, and its Secret calls. */
class TimedReconciler implements ClaimReconcilePort {
  readonly reconcileTime = new Stopwatch();
  readonly secretTime = new Stopwatch();

  constructor(private readonly inner: ClaimReconciler) {}

  get publisherId(): string | undefined {
    return this.inner.publisherId;
  }
  get awaitsBeforeFirstChange(): boolean | undefined {
    return this.inner.awaitsBeforeFirstChange;
  }
  reconcile(claim: DatabaseClaim, ports: ClaimPorts): Promise<ClaimReconcile> {
    return this.reconcileTime.time(() => this.inner.reconcile(claim, this.#timed(ports)));
  }
  finalize(...[claim, ports, options]: Parameters<ClaimReconcilePort['finalize']>): Promise<ClaimReconcile> {
    return this.inner.finalize(claim, this.#timed(ports), options);
  }
  #timed(ports: ClaimPorts): ClaimPorts {
    return {
      ...ports,
      secretFor: (namespace, secretName) =>
        new TimedSink(ports.secretFor(namespace, secretName), this.secretTime),
    };
  }
}

/** CPU seconds (user + system, and reaped children's) of this process's descendants, by command. */
function descendantCpuSeconds(): Map<string, number> {
  const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
  const processes = new Map<number, { parent: number; command: string; seconds: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // pid (comm) state ppid ... utime(14) stime(15) cutime(16) cstime(17): comm may hold spaces.
    const command = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cpu = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0);
    processes.set(Number(entry), { parent: Number(fields[1]), command, seconds: cpu / ticks });
  }
  const isDescendant = (pid: number): boolean => {
    for (let at = processes.get(pid)?.parent; at !== undefined && at > 1; at = processes.get(at)?.parent) {
      if (at === process.pid) return true;
    }
    return false;
  };
  const byCommand = new Map<string, number>();
  for (const [pid, { command, seconds }] of processes) {
    if (isDescendant(pid)) byCommand.set(command, (byCommand.get(command) ?? 0) + seconds);
  }
  return byCommand;
}

function cpuDelta(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  return Object.fromEntries(
    [...after]
      .map(([command, seconds]) => [command, round(seconds - (before.get(command) ?? 0))] as const)
      .filter(([, seconds]) => seconds > 0)
      .sort(([, a], [, b]) => b - a),
  );
}

/** An audit log line with the fields kube-apiserver writes beside those AuditEntry types. */
type AuditLine = AuditEntry & { readonly auditID?: string; readonly requestReceivedTimestamp?: string };

function countBy<T>(items: readonly T[], keyOf: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[keyOf(item)] = (counts[keyOf(item)] ?? 0) + 1;
  return counts;
}

function perClaim(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(counts)
      .sort(([, a], [, b]) => b - a)
      .map(([key, count]) => [key, round(count / CLAIMS, 3)]),
  );
}

/** The controller's requests (deduplicated: a watch logs ResponseStarted and ResponseComplete). */
function controllerRequests(entries: readonly AuditLine[]): AuditLine[] {
  const seen = new Set<string>();
  return entries.filter((entry) => {
    if (entry.user.username !== CONTROLLER_USER) return false;
    const id = entry.auditID ?? `${entry.requestURI}@${entry.stageTimestamp}`;
    if (entry.stage !== 'ResponseComplete' && entry.verb !== 'watch') return false;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

function resourceOf(entry: AuditLine): string {
  const ref = entry.objectRef;
  return `${entry.verb} ${ref?.resource ?? entry.requestURI}${ref?.subresource ? `/${ref.subresource}` : ''}`;
}

/** Server-side seconds of the controller's requests by verb (watches excluded: they stay open). */
function serverSeconds(requests: readonly AuditLine[]): Record<string, number> {
  const seconds: Record<string, number> = {};
  for (const entry of requests) {
    if (entry.verb === 'watch' || !entry.requestReceivedTimestamp || !entry.stageTimestamp) continue;
    const took = (Date.parse(entry.stageTimestamp) - Date.parse(entry.requestReceivedTimestamp)) / 1000;
    seconds[entry.verb] = (seconds[entry.verb] ?? 0) + took;
  }
  return Object.fromEntries(Object.entries(seconds).map(([verb, s]) => [verb, round(s)]));
}

/** Runs `work` for 0..count-1, at most `limit` at a time. */
async function boundedAll(
  count: number,
  limit: number,
  work: (i: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  const runner = async () => {
    while (next < count) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, runner));
}

function isReady(object: KubeChange['object']): boolean {
  const conditions = (object.status as { conditions?: Array<{ type: string; status: string }> } | undefined)
    ?.conditions;
  return conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** One controller phase: a fresh cluster and control plane, all claims to Ready, a no-op resync. */
async function controllerRun(work: string): Promise<ControllerRun> {
  settleDisk();
  const cluster = await startCluster({ settings: STATEMENT_LOG_SETTINGS });
  try {
    const bed = await startKubeTestBed({ controllerManager: false });
    try {
      // The bed's own view also watches Secrets, Events, Leases and ConfigMaps: in the bench
      // process that would be decoding ~3 more objects per claim. Only the claims are watched here.
      bed.objects.close();
      const objects = await KubeObjects.open(bed.plane.adminConfig(), [CLAIM_RESOURCE], [CLAIM_PLURAL]);
      try {
        const measured = await measure(cluster, bed.plane, objects, await bed.controllerConfig(), work);
        // The first pass's statements and the no-op resync's, apart.
        const log = readFileSync(join(cluster.runDir, 'server.log'), 'utf8');
        const statements = loggedStatements(log.slice(0, measured.logLengthBeforeNoop));
        const noopStatements = loggedStatements(log.slice(measured.logLengthBeforeNoop));
        return {
          ...measured,
          cpu: { bench_process: round(measured.benchCpuSeconds), ...measured.servers },
          statements,
          noopStatements,
        };
      } finally {
        objects.close();
      }
    } finally {
      await bed.plane.stop();
    }
  } finally {
    await cluster.stop();
  }
}

async function measure(
  cluster: PostgresCluster,
  plane: KubeControlPlane,
  objects: KubeObjects,
  controllerConfig: Parameters<typeof kubeClients>[0],
  work: string,
) {
  const reconciler = new ClaimReconciler({
    config: await configFor(cluster, work),
    publisherId: DEFAULT_PUBLISHER_ID,
    maxConnectionsPerInstance: WORKERS,
  });
  const timed = new TimedReconciler(reconciler);
  const controller = new ClaimController({
    clients: kubeClients(controllerConfig),
    reconciler: timed,
    workers: WORKERS,
    // As deployed (the CLI always keeps them); RECORDS=0 measures without.
    ...(RECORDS ? { records: { namespace: CONTROLLER_SERVICE_ACCOUNT.namespace } } : {}),
  });
  let rssMax = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    rssMax = Math.max(rssMax, process.memoryUsage().rss);
  }, RSS_SAMPLE_MILLIS);
  let controllerStopped: Promise<void> | undefined;
  const stopController = () => {
    controllerStopped ??= controller.stop();
    return controllerStopped;
  };
  try {
    for (let n = 0; n < Math.min(NAMESPACES, CLAIMS); n++) await objects.ensureNamespace(namespaceOf(n));
    await controller.start();

    const reconciles: KeyReconciled[] = [];
    let lastReconciled = performance.now();
    controller.on('reconciled', (reconciled: KeyReconciled) => {
      reconciles.push(reconciled);
      lastReconciled = performance.now();
    });
    const ready = new Set<string>();
    let timer: NodeJS.Timeout | undefined;
    const allReady = new Promise<void>((resolve, reject) => {
      objects.on('change', ({ type, plural, object }: KubeChange) => {
        if (plural !== CLAIM_PLURAL || type === 'DELETED' || !isReady(object)) return;
        ready.add(`${object.metadata.namespace}/${object.metadata.name}`);
        if (ready.size === CLAIMS) resolve();
      });
      timer = setTimeout(() => {
        const failed = reconciles.filter((r) => r.outcome === 'error');
        reject(
          new Error(
            `${ready.size} of ${CLAIMS} claims Ready after ${TIMEOUT_SECONDS} s; ${failed.length} failed reconciles, first: ${failed[0]?.error}`,
          ),
        );
      }, TIMEOUT_SECONDS * 1000);
    });

    const admin = kubeClients(plane.adminConfig());
    const rssAtStart = process.memoryUsage().rss;
    const settings = await serverSettings(cluster);
    const server = await watchServer(cluster);
    const phaseConditions = watchConditions();
    const cpuBefore = process.cpuUsage();
    const serversBefore = descendantCpuSeconds();
    const started = performance.now();
    await boundedAll(CLAIMS, CREATE_CONCURRENCY, (i) =>
      // Through client-node on kept-alive connections: the harness's own requests open a TLS
      // connection each, which cost this process more CPU than the controller's requests.
      admin.custom.createNamespacedCustomObject({
        group: CLAIM_GROUP,
        version: CLAIM_VERSION,
        plural: CLAIM_PLURAL,
        namespace: namespaceOf(i),
        body: {
          apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
          kind: 'DatabaseClaim',
          metadata: { name: `app-${i}`, namespace: namespaceOf(i) },
          spec: { instanceLabel: 'bench', userName: `app_${i}`, databaseName: `app_${i}` },
        },
      }),
    );
    const createdSeconds = (performance.now() - started) / 1000;
    await allReady.finally(() => clearTimeout(timer));
    const seconds = (performance.now() - started) / 1000;
    const conditions = phaseConditions();
    const cpu = process.cpuUsage(cpuBefore);
    const servers = cpuDelta(serversBefore, descendantCpuSeconds());
    const serverActivity = await server();
    const memory = process.memoryUsage();
    const reconcileMillis = timed.reconcileTime.millis;
    const secretMillis = timed.secretTime.millis;

    // Requeues after the status write (and their requests) are part of the cost per claim.
    while (performance.now() - lastReconciled < SETTLE_MILLIS) await sleep(100);
    const requests = controllerRequests(plane.auditEntries() as AuditLine[]);

    const firstPassReconciles = reconciles.length;
    // A resync of the same, unchanged claims: what it costs in API requests (issue 27.8, 27.10).
    const auditBefore = plane.auditEntries().length;
    const logLengthBeforeNoop = readFileSync(join(cluster.runDir, 'server.log'), 'utf8').length;
    const noopOutcomes: string[] = [];
    const noopDone = new Promise<void>((resolve) => {
      const listener = (reconciled: KeyReconciled) => {
        noopOutcomes.push(reconciled.outcome);
        if (noopOutcomes.length < CLAIMS) return;
        controller.off('reconciled', listener);
        resolve();
      };
      controller.on('reconciled', listener);
    });
    const noopStarted = performance.now();
    controller.enqueueAll();
    await noopDone;
    const noopSeconds = (performance.now() - noopStarted) / 1000;
    while (performance.now() - lastReconciled < SETTLE_MILLIS) await sleep(100);
    await stopController();
    const noopRequests = controllerRequests((plane.auditEntries() as AuditLine[]).slice(auditBefore));
    const failed = reconciles.filter((r) => r.outcome === 'error');
    return {
      seconds,
      conditions,
      server: serverActivity,
      settings,
      createdSeconds,
      memory,
      rssAtStart,
      rssMax: Math.max(rssMax, memory.rss),
      requests,
      reconciles: reconciles.length,
      firstPassReconciles,
      logLengthBeforeNoop,
      failedReconciles: failed.length,
      firstError: failed[0]?.error,
      benchCpuSeconds: (cpu.user + cpu.system) / 1e6,
      servers,
      reconcileMillis,
      reconcileCalls: timed.reconcileTime.calls,
      secretMillis,
      secretCalls: timed.secretTime.calls,
      noop: { seconds: noopSeconds, requests: noopRequests, outcomes: countBy(noopOutcomes, (o) => o) },
    };
  } finally {
    clearInterval(sampler);
    await stopController();
    await reconciler.close();
  }
}

/** One statement the server logged, with the session that ran it and its server-side time. */
interface LoggedStatement {
  readonly session: string;
  readonly text: string;
  /** Milliseconds the server spent on it (parse + bind + execute for an extended-protocol query). */
  readonly millis: number;
}

/** Every statement logged with its duration, each line tagged with its session. */
const STATEMENT_LOG_SETTINGS = { log_min_duration_statement: 0, log_line_prefix: '%c|' };

/** The statements in a server log written with {@link STATEMENT_LOG_SETTINGS} (first lines only). */
function loggedStatements(serverLog: string): LoggedStatement[] {
  const statements: LoggedStatement[] = [];
  const preparing = new Map<string, number>();
  for (const line of serverLog.split('\n')) {
    const match =
      /^([0-9a-f]+\.[0-9a-f]+)\|LOG: {2}duration: ([\d.]+) ms {2}(statement|parse|bind|execute)[^:]*: (.*)$/.exec(
        line,
      );
    if (!match) continue;
    const [, session, millis, phase, text] = match as unknown as [string, string, string, string, string];
    if (phase === 'parse' || phase === 'bind') {
      preparing.set(session, (preparing.get(session) ?? 0) + Number(millis));
      continue;
    }
    statements.push({ session, text, millis: Number(millis) + (preparing.get(session) ?? 0) });
    preparing.delete(session);
  }
  return statements;
}

/** The writing statements the floor replays (reads are what the reconciler adds to them). */
const WRITE_STATEMENT = /^(CREATE|ALTER|GRANT|COMMENT|BEGIN|COMMIT)\b/i;
const claimIndexOf = (text: string) => /\bapp_(\d+)/.exec(text)?.[1];

/**
 * Each claim's writing statements in the order its session ran them; a BEGIN belongs to the
 * claim of its session's next statement, a COMMIT to that of its previous one.
 */
function writesByClaim(statements: readonly LoggedStatement[]): string[][] {
  const byClaim = new Map<string, string[]>();
  const lastClaimOf = new Map<string, string>();
  const pendingBegin = new Set<string>();
  for (const { session, text } of statements) {
    if (!WRITE_STATEMENT.test(text)) continue;
    if (/^BEGIN\b/i.test(text)) {
      pendingBegin.add(session);
      continue;
    }
    const claim = /^COMMIT\b/i.test(text) ? lastClaimOf.get(session) : claimIndexOf(text);
    if (claim === undefined) continue;
    const list = byClaim.get(claim) ?? [];
    if (pendingBegin.delete(session)) list.push('BEGIN');
    list.push(text);
    byClaim.set(claim, list);
    lastClaimOf.set(session, claim);
  }
  return [...byClaim.values()];
}

const kindOf = ({ text }: LoggedStatement) => {
  const words = /^(\w+)(?: (\w+))?/.exec(text);
  const first = words?.[1]?.toUpperCase() ?? 'other';
  // CREATE DATABASE and CREATE ROLE differ by orders of magnitude: kept apart.
  return first === 'CREATE' || first === 'ALTER' ? `${first} ${words?.[2]?.toUpperCase()}` : first;
};

/**
 * Where the server's time went, per claim: statements by kind (`SELECT`, `CREATE DATABASE`,
 * ...), their count and server-side milliseconds, and the sessions that ran them (the
 * reconciler's pooled connections plus one verify login per claim).
 */
function statementsPerClaim(statements: readonly LoggedStatement[]) {
  const millis: Record<string, number> = {};
  for (const statement of statements)
    millis[kindOf(statement)] = (millis[kindOf(statement)] ?? 0) + statement.millis;
  return {
    count: perClaim(countBy(statements, kindOf)),
    server_ms: Object.fromEntries(
      Object.entries(millis)
        .sort(([, a], [, b]) => b - a)
        .map(([kind, ms]) => [kind, round(ms / CLAIMS, 2)]),
    ),
    sessions: round(new Set(statements.map(({ session }) => session)).size / CLAIMS, 3),
  };
}

/**
 * The floor (issue 29.4): the claims' writing statements as the folder pass logged them,
 * replayed on a fresh cluster of the same kind by WORKERS connections, one claim at a time
 * each, with nothing else: no reads, no verify login, no secrets, no status.
 */
async function floorRun(claims: readonly string[][]): Promise<FloorRun> {
  settleDisk();
  const cluster = await startCluster({ settings: STATEMENT_LOG_SETTINGS });
  const clients = Array.from({ length: WORKERS }, () => new pg.Client(cluster.connectionConfig()));
  try {
    await Promise.all(clients.map((client) => client.connect()));
    const settings = await serverSettings(cluster);
    const conditions = watchConditions();
    const server = await watchServer(cluster);
    let next = 0;
    const cpuBefore = process.cpuUsage();
    const serversBefore = descendantCpuSeconds();
    const started = performance.now();
    await Promise.all(
      clients.map(async (client) => {
        while (next < claims.length) {
          for (const text of claims[next++]!) await client.query(text);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    return {
      seconds,
      cpu: {
        bench_process: round((cpu.user + cpu.system) / 1e6),
        ...cpuDelta(serversBefore, descendantCpuSeconds()),
      },
      conditions: conditions(),
      server: await server(),
      settings,
      statements: loggedStatements(readFileSync(join(cluster.runDir, 'server.log'), 'utf8')),
    };
  } finally {
    await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
    await cluster.stop();
  }
}

/** One measured phase (a floor replay or a folder pass) and what surrounded it. */
interface PhaseRun {
  readonly seconds: number;
  /** CPU seconds of the bench process and of the server's processes during the phase. */
  readonly cpu: Record<string, number>;
  readonly conditions: PhaseConditions;
  readonly server: ServerActivity;
  /** The cluster's non-default settings (to show the folder's and the floor's are alike). */
  readonly settings: Record<string, string>;
  readonly statements: LoggedStatement[];
}

type FloorRun = PhaseRun;

/**
 * Wall milliseconds per claim from each announced step (`create-database`, `set-password`,
 * `publish-secret`, ...) to the claim's next step or its outcome, by step kind: the time of
 * the step's statement or file work and of any reads before the next one (the login
 * verification runs between `set-password` and `publish-secret`).
 */
class StepTimes {
  readonly #events = new Map<string, Array<{ at: number; kind: string }>>();

  readonly onStep = (step: Step) => {
    const events = this.#events.get(step.claim) ?? [];
    events.push({ at: performance.now(), kind: step.action.split(' ')[0]! });
    this.#events.set(step.claim, events);
  };

  readonly onOutcome = (outcome: ClaimOutcome) => {
    this.#events.get(outcome.claim)?.push({ at: performance.now(), kind: 'outcome' });
  };

  perClaimMillis(): Record<string, number> {
    const millis: Record<string, number> = {};
    for (const events of this.#events.values()) {
      for (let i = 0; i + 1 < events.length; i++) {
        const { at, kind } = events[i]!;
        millis[kind] = (millis[kind] ?? 0) + events[i + 1]!.at - at;
      }
    }
    return Object.fromEntries(
      Object.entries(millis)
        .sort(([, a], [, b]) => b - a)
        .map(([kind, ms]) => [kind, round(ms / CLAIMS, 1)]),
    );
  }
}

/**
 * One folder-mode pass over CLAIMS claims on a fresh cluster that logs every statement
 * (a line per statement: small beside CREATE DATABASE, and it only slows the folder pass).
 */
async function folderRun(work: string): Promise<FolderRun> {
  settleDisk();
  const cluster = await startCluster({ settings: STATEMENT_LOG_SETTINGS });
  const outputDir = await mkdtemp(join(work, 'out-'));
  try {
    const yaml = Array.from(
      { length: CLAIMS },
      (_, i) =>
        `apiVersion: persistance.atlas.infoblox.com/v1\nkind: DatabaseClaim\nmetadata:\n  name: app-${i}\n  namespace: ${namespaceOf(i)}\nspec:\n  databaseName: app_${i}\n  userName: app_${i}\n  instanceLabel: bench\n`,
    ).join('---\n');
    const { claims } = parseClaims(yaml, 'bench.yaml');
    const steps = new StepTimes();
    const reconciler = new Reconciler({
      config: await configFor(cluster, work),
      outputDir,
      concurrency: WORKERS,
      onStep: steps.onStep,
      onOutcome: steps.onOutcome,
    });
    const settings = await serverSettings(cluster);
    const cpuBefore = process.cpuUsage();
    const serversBefore = descendantCpuSeconds();
    const logStart = readFileSync(join(cluster.runDir, 'server.log'), 'utf8').length;
    const conditions = watchConditions();
    const server = await watchServer(cluster);
    const started = performance.now();
    const { outcomes } = await reconciler.reconcile(claims);
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const servers = cpuDelta(serversBefore, descendantCpuSeconds());
    const phase = { conditions: conditions(), server: await server() };
    const failed = outcomes.filter((o) => o.result === 'error');
    if (failed.length > 0) throw new Error(`${failed.length} claims failed: ${failed[0]?.error}`);
    const statements = loggedStatements(
      readFileSync(join(cluster.runDir, 'server.log'), 'utf8').slice(logStart),
    );
    return {
      seconds,
      ...phase,
      settings,
      cpu: { bench_process: round((cpu.user + cpu.system) / 1e6), ...servers },
      statements,
      stepMillis: steps.perClaimMillis(),
    };
  } finally {
    await cluster.stop();
    // Its secret folders: the next pass starts from an empty output folder too.
    await rm(outputDir, { recursive: true, force: true });
  }
}

interface FolderRun extends PhaseRun {
  readonly stepMillis: Record<string, number>;
}

/** A phase's figures as printed: seconds, the machine's and the server's conditions. */
function phaseFigures(name: string, phase: PhaseRun) {
  return {
    phase: name,
    seconds: round(phase.seconds, 3),
    cpu_seconds: round(cpuSeconds(phase)),
    ...phase.conditions,
    ...phase.server,
  };
}

/** CPU seconds of a phase: the bench process's (the reconciler or the replayer) and the server's. */
const cpuSeconds = (phase: PhaseRun) => Object.values(phase.cpu).reduce((sum, seconds) => sum + seconds, 0);

/** The controller phase: its figures as a {@link PhaseRun} plus what only it has. */
type ControllerRun = PhaseRun &
  Awaited<ReturnType<typeof measure>> & { readonly noopStatements: LoggedStatement[] };

/** What a bench run measures against the floor: the controller, the folder pass, or both. */
type MeasuredKind = 'controller' | 'folder';

/** Every phase of a run, by kind, in round order, and the order they ran in. */
interface Rounds {
  readonly controller: ControllerRun[];
  readonly folder: FolderRun[];
  readonly floor: FloorRun[];
  /** `<kind> <round>` in the order the phases ran, with each phase's figures. */
  readonly phases: Array<ReturnType<typeof phaseFigures>>;
}

/**
 * ROUNDS rounds of the `measured` phases and the floor, each phase on a fresh cluster (and
 * control plane) after `sync`, the order reversed every other round so that a machine
 * getting busier or quieter during a run weighs on both sides alike. On 2 shared cores the
 * floor alone moves by 2× from minute to minute: only a floor measured beside a phase is
 * comparable with it. The floor replays the writing statements of the run's first phase
 * (round 1 starts with a measured phase, so they are there before the first floor).
 */
async function roundsAgainstFloor(work: string, measured: readonly MeasuredKind[]): Promise<Rounds> {
  const rounds = Number(process.env.ROUNDS ?? 2);
  const runs: Rounds = { controller: [], folder: [], floor: [], phases: [] };
  let writes: string[][] | undefined;
  const kinds = [...measured, 'floor' as const];
  for (let n = 0; n < rounds; n++) {
    for (const kind of n % 2 === 0 ? kinds : [...kinds].reverse()) {
      let phase: PhaseRun;
      if (kind === 'floor') {
        phase = await floorRun(writes!);
        runs.floor.push(phase);
      } else {
        const run = kind === 'controller' ? await controllerRun(work) : await folderRun(work);
        (runs[kind] as PhaseRun[]).push(run);
        writes ??= writesByClaim(run.statements);
        phase = run;
      }
      runs.phases.push(phaseFigures(`${kind} ${n + 1}`, phase));
      console.error(JSON.stringify(runs.phases.at(-1)));
    }
  }
  return runs;
}

const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
const meanSeconds = (runs: readonly PhaseRun[]) => sum(runs.map((run) => run.seconds)) / runs.length;

/**
 * One measured kind against the floors of the same rounds: wall seconds and CPU seconds
 * (bench process and every server process: PostgreSQL, and for the controller
 * kube-apiserver and etcd) per round, per-round ratios, and the ratio of the means. Every
 * phase is CPU-bound on these cores, so the CPU ratio moves less with the machine's load.
 */
function againstFloor(kind: MeasuredKind, runs: readonly PhaseRun[], floors: readonly FloorRun[]) {
  return {
    [`${kind}_seconds`]: runs.map((run) => round(run.seconds, 1)),
    [`${kind}_ratio_to_floor`]: round(meanSeconds(runs) / meanSeconds(floors)),
    [`${kind}_round_ratios`]: runs.map((run, i) => round(run.seconds / floors[i]!.seconds)),
    [`${kind}_cpu_seconds`]: runs.map((run) => round(cpuSeconds(run), 1)),
    [`${kind}_cpu_ratio_to_floor`]: round(sum(runs.map(cpuSeconds)) / sum(floors.map(cpuSeconds))),
    [`${kind}_round_cpu_ratios`]: runs.map((run, i) => round(cpuSeconds(run) / cpuSeconds(floors[i]!))),
  };
}

/** The `floor` line: every measured kind against the floor, and each phase's conditions. */
function printFloor(runs: Rounds, measured: readonly MeasuredKind[]): void {
  const floor = runs.floor[0]!;
  const firstOf = (kind: MeasuredKind): PhaseRun | undefined => runs[kind][0];
  console.log(
    JSON.stringify({
      bench: 'controller-1000',
      result: 'floor',
      claims: CLAIMS,
      workers: WORKERS,
      rounds: runs.floor.length,
      floor_seconds: runs.floor.map((run) => round(run.seconds, 1)),
      floor_cpu_seconds: runs.floor.map((run) => round(cpuSeconds(run), 1)),
      ...Object.assign({}, ...measured.map((kind) => againstFloor(kind, runs[kind], runs.floor))),
      goal: 1.5,
      // Every kind of cluster is started alike; this names any setting that is not.
      settings_differ: Object.fromEntries(
        measured.map((kind) => [kind, settingsDiffer(firstOf(kind)!.settings, floor.settings)]),
      ),
      // In the order they ran: each one's load average at its start, PSI stalls, CPU.
      phases: runs.phases,
      // Everything each ran, per claim, by first keyword (from the server's log), first round.
      ...Object.fromEntries(
        measured.map((kind) => [
          `${kind}_statements_per_claim`,
          statementsPerClaim(firstOf(kind)!.statements),
        ]),
      ),
      floor_statements_per_claim: statementsPerClaim(floor.statements),
      cpu_seconds_by_process: Object.fromEntries(
        [...measured, 'floor' as const].map((kind) => [kind, runs[kind].map((run: PhaseRun) => run.cpu)]),
      ),
      ...(runs.folder[0] ? { folder_step_wall_ms_per_claim: runs.folder[0].stepMillis } : {}),
    }),
  );
}

/** What only the controller phase shows: readiness, memory, API requests, the no-op resync, where its time went. */
function printController(runs: readonly ControllerRun[], folder: FolderRun | undefined): void {
  const run = runs[0]!;
  const byVerb = countBy(run.requests, (entry) => entry.verb);
  const workerMillis = run.seconds * 1000 * WORKERS;
  console.log(
    JSON.stringify({
      bench: 'controller-1000',
      result: 'all-ready',
      api_server: 'real kube-apiserver + etcd (test harness), controller as its ServiceAccount',
      claims: CLAIMS,
      records_configmap: RECORDS,
      namespaces: Math.min(NAMESPACES, CLAIMS),
      workers: WORKERS,
      create_concurrency: CREATE_CONCURRENCY,
      seconds_to_all_created: runs.map((r) => round(r.createdSeconds, 3)),
      seconds_to_all_ready: runs.map((r) => round(r.seconds, 3)),
      claims_per_second: round(CLAIMS / meanSeconds(runs), 1),
      rss_mb_before_first_claim: round(run.rssAtStart / MB, 1),
      rss_mb_after_ready: round(run.memory.rss / MB, 1),
      rss_mb_max: round(Math.max(...runs.map((r) => r.rssMax)) / MB, 1),
      heap_used_mb_after_ready: round(run.memory.heapUsed / MB, 1),
      external_mb_after_ready: round(run.memory.external / MB, 1),
      ...(folder ? { folder_pass_seconds: round(folder.seconds, 3) } : {}),
    }),
  );
  console.log(
    JSON.stringify({
      bench: 'controller-1000',
      result: 'api-requests-per-claim',
      user: CONTROLLER_USER,
      claims: CLAIMS,
      total: run.requests.length,
      by_verb: perClaim(byVerb),
      by_resource: perClaim(countBy(run.requests, resourceOf)),
      non_2xx: countBy(
        run.requests.filter((entry) => (entry.responseStatus?.code ?? 200) >= 300),
        (entry) => `${resourceOf(entry)} ${entry.responseStatus?.code}`,
      ),
      // Until all Ready and settled; the no-op resync's reconciles are counted apart.
      reconciles_per_claim: round(run.firstPassReconciles / CLAIMS),
      noop_resync_reconciles_per_claim: round((run.reconciles - run.firstPassReconciles) / CLAIMS),
      failed_reconciles: sum(runs.map((r) => r.failedReconciles)),
      ...(run.firstError ? { first_error: run.firstError } : {}),
    }),
  );
  console.log(
    JSON.stringify({
      bench: 'controller-1000',
      result: 'noop-resync',
      claims: CLAIMS,
      seconds: round(run.noop.seconds, 3),
      outcomes: run.noop.outcomes,
      api_requests_total: run.noop.requests.length,
      api_requests_by_verb: countBy(run.noop.requests, (entry) => entry.verb),
      api_writes: run.noop.requests.filter((entry) => !['get', 'list', 'watch'].includes(entry.verb)).length,
      statements_per_claim: statementsPerClaim(run.noopStatements),
    }),
  );
  console.log(
    JSON.stringify({
      bench: 'controller-1000',
      result: 'time-breakdown',
      claims: CLAIMS,
      // Worker-seconds: WORKERS × seconds to all Ready, and how much of it went where (first round).
      worker_seconds: round(workerMillis / 1000),
      reconcile_core_worker_seconds: round(run.reconcileMillis / 1000),
      of_which_secret_api_worker_seconds: round(run.secretMillis / 1000),
      reconcile_core_minus_secret_api_worker_seconds: round((run.reconcileMillis - run.secretMillis) / 1000),
      outside_reconcile_core_worker_seconds: round((workerMillis - run.reconcileMillis) / 1000),
      reconcile_core_calls: run.reconcileCalls,
      secret_api_calls: run.secretCalls,
      server_side_seconds_by_verb: serverSeconds(run.requests),
      note: '2 cores shared with other work: noisy',
    }),
  );
}

const located = locateControlPlane();
const floorOnly = process.env.FLOOR_ONLY === '1';
if (!floorOnly && 'missing' in located) {
  // As the control-plane tests: not run where there is none, failed where it is required.
  if (process.env.HOTLOAD_REQUIRE_CONTROL_PLANE === '1') throw new Error(located.missing);
  console.log(JSON.stringify({ bench: 'controller-1000', result: 'not-run', reason: located.missing }));
  process.exit(0);
}
// FLOOR_ONLY: for iterating on the folder mode, its pass and the floor only, no control plane.
const measured: MeasuredKind[] = floorOnly
  ? ['folder']
  : process.env.FOLDER === '0'
    ? ['controller']
    : ['controller', 'folder'];
const work = await mkdtemp(join(tmpdir(), 'controller-bench-'));
try {
  const runs = await roundsAgainstFloor(work, measured);
  printFloor(runs, measured);
  if (runs.controller.length > 0) printController(runs.controller, runs.folder[0]);
} finally {
  await rm(work, { recursive: true, force: true });
}
