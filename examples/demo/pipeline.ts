/**
 * The whole claim-to-connection pipeline, end to end, on embedded PostgreSQL:
 *
 *   DatabaseClaim (examples/service/k8s) → claim reconciler → secret folder (kubelet-style)
 *     → example service on hotload-pg → concurrent HTTP load
 *
 * and, while the load runs, credential changes: password rotations (each one moves the
 * service to the other login user, `_a` ↔ `_b`) and a move of the database to a second
 * PostgreSQL instance, which migrates the data online (both instances run with
 * wal_level=logical). Used by `npm run demo` and by the end-to-end test.
 */
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type DatabaseClaim,
  DEFAULT_CUTOVER_SETTINGS,
  loadClaimsFromDirectory,
  loadReconcilerConfig,
  Reconciler,
  readStatus,
  secretDirectory,
  statusPath,
} from 'hotload-claim-reconciler';
import type { DrainedEvent, SwitchEvent } from 'hotload-pg';
import {
  LOGICAL_REPLICATION_SETTINGS,
  nextEvent,
  type PostgresCluster,
  startCluster,
} from 'hotload-test-support';
import { type NotesService, startNotesService } from '../service/src/notes-service.js';
import { type LoadStats, startLoad } from './load-generator.js';
import { countRows, longestGap, type MoveReport, missingIds, moveCutover } from './move-check.js';

/** Options of {@link runPipelineDemo}. */
export interface PipelineOptions {
  /** How long the load runs, in seconds (with `pace: 'clock'`). */
  durationSeconds: number;
  /**
   * When the changes are made. `'clock'` (default, for show): spread evenly over
   * `durationSeconds`. `'events'` (for tests): each change once the load answered on the
   * previous generation, the next one once this one switched and its old generation
   * drained; the run ends when the load answered on the last generation, so no timing
   * assumption is needed.
   */
  pace?: 'clock' | 'events';
  /** Password rotations (each switches the active login user). */
  rotations: number;
  /** Concurrent request loops. */
  concurrency: number;
  /** Called about once a second with live figures. */
  onProgress?: (progress: Progress) => void;
  /** Called when a change is made. */
  onChange?: (change: ChangeRecord) => void;
}

/** Live figures. */
export interface Progress {
  elapsedSeconds: number;
  queriesPerSecond: number;
  ok: number;
  failed: number;
  generation: number | undefined;
  user: string | undefined;
  server: string | undefined;
  changesDone: number;
  changesPlanned: number;
}

/** One change made to the credentials while the load ran. */
export interface ChangeRecord {
  kind: 'rotation' | 'move';
  atSeconds: number;
  description: string;
}

/** What the demo measured. */
export interface PipelineResult {
  changes: ChangeRecord[];
  stats: LoadStats;
  /** Secret swap → new generation serving, per switch (ms). */
  switchLatenciesMs: number[];
  /**
   * Secret change → last client of the old generation closed, per switch (ms): how long
   * the old credentials stayed in use (switch latency + drain).
   */
  oldCredentialsGoneMs: number[];
  finalUser: string | undefined;
  finalServerPort: number | undefined;
  /** Ports of the two instances, to tell which one the service ended on. */
  instancePorts: { first: number; second: number };
  /** The login user the secret names at the end. */
  publishedUser: string;
  /** The move's data figures (rows before/after, missing acknowledged writes, write pause). */
  move: MoveReport | undefined;
}

const CLAIM_TEMPLATE = new URL('../service/k8s/databaseclaim.yaml', import.meta.url);
const MOVED_LABEL = 'relocated.notes';

/** Runs the pipeline; always stops every server and removes every temp folder. */
export async function runPipelineDemo(options: PipelineOptions): Promise<PipelineResult> {
  const workDir = await mkdtemp(join(tmpdir(), 'hotload-demo-'));
  const clusters: PostgresCluster[] = [];
  try {
    // Each started cluster is recorded at once, so a failure of the other still stops it.
    // wal_level=logical: the move migrates the data by logical replication.
    const start = async () => {
      const cluster = await startCluster({ settings: LOGICAL_REPLICATION_SETTINGS });
      clusters.push(cluster);
      return cluster;
    };
    const [first, second] = await Promise.all([start(), start()]);
    return await runAgainst(first, second, workDir, options);
  } finally {
    await Promise.all(clusters.map((c) => c.stop()));
    await rm(workDir, { recursive: true, force: true });
  }
}

async function runAgainst(
  first: PostgresCluster,
  second: PostgresCluster,
  workDir: string,
  options: PipelineOptions,
): Promise<PipelineResult> {
  const claimsDir = join(workDir, 'claims');
  const outputDir = join(workDir, 'secrets');
  const configFile = await writeReconcilerConfig(workDir, first, second);
  await mkdir(claimsDir, { recursive: true });
  const claimFile = join(claimsDir, 'notes.yaml');
  await copyFile(CLAIM_TEMPLATE, claimFile);

  const table = 'notes';
  let database = '';
  let moving = false;
  let sourceRowsBeforeCutover: number | null = null;
  const config = await loadReconcilerConfig(configFile);
  const reconciler = new Reconciler({
    config,
    outputDir,
    // The move's cutover is its secret publish: count the source's rows right before it.
    onStep: async ({ action }) => {
      if (moving && action === 'publish-secret' && sourceRowsBeforeCutover === null)
        sourceRowsBeforeCutover = await countRows(first, database, table);
    },
  });
  const reconcile = async (rotate: boolean) => {
    const { claims, problems } = await loadClaimsFromDirectory(claimsDir);
    const errors = problems.filter((p) => p.severity === 'error');
    if (errors.length > 0) throw new Error(`invalid claims: ${errors.map((p) => p.message).join('; ')}`);
    const { outcomes } = await reconciler.reconcile(claims, { rotate });
    const failed = outcomes.find((o) => o.result === 'error');
    if (failed) throw new Error(`reconcile failed for ${failed.claim}: ${failed.error}`);
    return claims;
  };
  const claim = onlyClaim(await reconcile(false));
  database = claim.databaseName;
  let moveWindow: { from: number; to: number } | undefined;
  const secretDir = secretDirectory(outputDir, claim.namespace, claim.secretName);

  const service = await startNotesService({ secretDirectory: secretDir, drainTimeoutMillis: 5_000 });
  const switchLatenciesMs: number[] = [];
  const oldCredentialsGoneMs: number[] = [];
  /** When the change that retired each generation was made (by retired generation id). */
  const retiredChangeAt = new Map<number, number>();
  service.pool.on('switch', (event: SwitchEvent) => {
    if (event.fromGeneration !== undefined && event.changedAt !== undefined) {
      switchLatenciesMs.push(event.switchedAt - event.changedAt);
      retiredChangeAt.set(event.fromGeneration, event.changedAt);
    }
  });
  service.pool.on('drained', (event: DrainedEvent) => {
    const changedAt = retiredChangeAt.get(event.generation);
    if (changedAt !== undefined) oldCredentialsGoneMs.push(Date.now() - changedAt);
  });

  const plan = planChanges(options.rotations);
  const changes: ChangeRecord[] = [];
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const load = startLoad(service.url, options.concurrency);
  const progress = reportProgress(load.stats, service.pool, elapsed, changes, plan.length, options);
  try {
    const byEvents = options.pace === 'events';
    for (const [index, kind] of plan.entries()) {
      if (byEvents) await load.nextWhoami();
      else await sleepUntil(started, (options.durationSeconds * 1000 * (index + 1)) / (plan.length + 1));
      const retiring = service.pool.generation;
      const switchedAndDrained = byEvents ? switchAndDrain(service.pool, retiring) : undefined;
      // a failed change below is the error to report, not this wait's later timeout
      switchedAndDrained?.catch(() => undefined);
      if (kind === 'move') await moveClaim(claimFile);
      moving = kind === 'move';
      const from = performance.now();
      await reconcile(kind === 'rotation');
      if (moving) moveWindow = { from, to: performance.now() };
      moving = false;
      const change = { kind, atSeconds: elapsed(), description: await describeSecret(secretDir, kind) };
      changes.push(change);
      options.onChange?.(change);
      await switchedAndDrained;
    }
    if (byEvents) await load.nextWhoami();
    else await sleepUntil(started, options.durationSeconds * 1000);
  } finally {
    clearInterval(progress);
    await load.stop();
    await service.close();
  }
  const published = await readFile(join(secretDir, 'username'), 'utf8');
  const status = await readStatus(statusPath(outputDir, claim.namespace, claim.secretName));
  const move: MoveReport | undefined = moveWindow && {
    sourceRowsBeforeCutover,
    targetRowsAfter: await countRows(second, database, table),
    acknowledgedWrites: load.stats.acknowledgedIds.length,
    missingAfterMove: await missingIds(second, database, table, load.stats.acknowledgedIds),
    writePauseMs: longestGap(load.stats.acknowledgedAt, moveWindow.from, moveWindow.to),
    cutover: moveCutover({ ...DEFAULT_CUTOVER_SETTINGS, ...config.migration }, status?.migration),
  };
  return {
    changes,
    stats: load.stats,
    switchLatenciesMs,
    oldCredentialsGoneMs,
    finalUser: load.stats.lastSeen?.user,
    finalServerPort: load.stats.lastSeen?.port,
    instancePorts: { first: first.port, second: second.port },
    publishedUser: published.trim(),
    move,
  };
}

/** Rotations spread out, with the move after the first half of them. */
function planChanges(rotations: number): Array<'rotation' | 'move'> {
  const plan: Array<'rotation' | 'move'> = Array.from({ length: rotations }, () => 'rotation');
  plan.splice(Math.ceil(rotations / 2), 0, 'move');
  return plan;
}

async function writeReconcilerConfig(
  workDir: string,
  first: PostgresCluster,
  second: PostgresCluster,
): Promise<string> {
  const fragment = async (label: string, cluster: PostgresCluster) => {
    const passwordFile = join(workDir, `${label}-master-password`);
    await writeFile(passwordFile, cluster.superuserPassword, { mode: 0o600 });
    return `${label}:\n  host: ${cluster.host}\n  port: ${cluster.port}\n  username: postgres\n  sslMode: disable\n  passwordFile: ${passwordFile}\n`;
  };
  const file = join(workDir, 'reconciler-config.yaml');
  const text = [
    'passwordConfig:\n  passwordComplexity: enabled\n  minPasswordLength: "20"\n  passwordRotationPeriod: "60"\n',
    await fragment('default', first),
    await fragment('relocated', second),
  ].join('');
  await writeFile(file, text);
  return file;
}

/** The claim's instance changes: the reconciler provisions there and migrates the data. */
async function moveClaim(claimFile: string): Promise<void> {
  const text = await readFile(claimFile, 'utf8');
  await writeFile(claimFile, text.replace(/instanceLabel: .*/, `instanceLabel: ${MOVED_LABEL}`));
}

async function describeSecret(secretDir: string, kind: ChangeRecord['kind']): Promise<string> {
  const read = async (key: string) => (await readFile(join(secretDir, key), 'utf8')).trim();
  const user = await read('username');
  const where = `${await read('hostname')}:${await read('port')}`;
  return kind === 'move' ? `moved to ${where} (user ${user})` : `rotated to user ${user}`;
}

function reportProgress(
  stats: LoadStats,
  pool: { readonly generation: number | undefined },
  elapsed: () => number,
  changes: readonly ChangeRecord[],
  changesPlanned: number,
  options: PipelineOptions,
): NodeJS.Timeout {
  let lastOk = 0;
  let lastAt = elapsed();
  return setInterval(() => {
    const now = elapsed();
    const queriesPerSecond = (stats.ok - lastOk) / (now - lastAt);
    lastOk = stats.ok;
    lastAt = now;
    options.onProgress?.({
      elapsedSeconds: now,
      queriesPerSecond,
      ok: stats.ok,
      failed: stats.failed,
      generation: pool.generation,
      user: stats.lastSeen?.user,
      server: stats.lastSeen ? `port ${stats.lastSeen.port}` : undefined,
      changesDone: changes.length,
      changesPlanned,
    });
  }, 1000);
}

/** The next switch away from generation `retiring`, then that generation's drain. */
async function switchAndDrain(pool: NotesService['pool'], retiring: number | undefined): Promise<void> {
  // Listening to both from now: a generation with no client left drains at once.
  const drained = nextEvent<DrainedEvent>(pool, 'drained', (event) => event.generation === retiring);
  await nextEvent<SwitchEvent>(pool, 'switch', (event) => event.fromGeneration === retiring);
  await drained;
}

function onlyClaim(claims: readonly DatabaseClaim[]): DatabaseClaim {
  if (claims.length !== 1) throw new Error(`expected one example claim, found ${claims.length}`);
  return claims[0]!;
}

async function sleepUntil(started: number, offsetMs: number): Promise<void> {
  const wait = started + offsetMs - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}
