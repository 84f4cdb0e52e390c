/**
 * `npm run demo`: credentials change under a running service and nothing fails.
 * See pipeline.ts for what happens; this file is the terminal front end.
 */
import { parseArgs } from 'node:util';
import { type PipelineResult, runPipelineDemo } from './pipeline.js';

const HELP = `Usage: npm run demo -- [options]

Runs the whole pipeline on embedded PostgreSQL: a DatabaseClaim is reconciled into a
database, login users and a kubelet-style secret folder; the example service reads it
through hotload-pg; concurrent HTTP load runs while passwords rotate (switching the login
user _a <-> _b) and the database moves to a second PostgreSQL instance, its data migrated
online (logical replication) so every acknowledged write is still there.

Options:
  --duration <seconds>   how long the load runs (default 20)
  --rotations <n>        password rotations during the run (default 4)
  --concurrency <n>      concurrent request loops (default 8)
  --json                 print only the summary, as one JSON object
  -h, --help             show this help

Exit status: 0 when every request succeeded and no acknowledged write was lost in the
move, 1 otherwise, 2 on a usage error,
3 when the pipeline could not be set up or a change could not be made.`;

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    rotations: { type: 'string', default: '4' },
    concurrency: { type: 'string', default: '8' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const durationSeconds = positiveNumber('duration', values.duration);
const rotations = positiveNumber('rotations', values.rotations);
const concurrency = positiveNumber('concurrency', values.concurrency);

const json = values.json;
const say = json ? () => {} : (line: string) => console.log(line);
say(`Starting two embedded PostgreSQL instances, reconciling the example claim, starting the service...`);
const result = await runPipelineDemo({
  durationSeconds,
  rotations,
  concurrency,
  onProgress: (p) =>
    say(
      `  ${p.elapsedSeconds.toFixed(0).padStart(3)}s  ${Math.round(p.queriesPerSecond).toString().padStart(5)} req/s` +
        `  ok ${p.ok.toString().padStart(6)}  failed ${p.failed}  generation ${p.generation ?? '-'}` +
        `  user ${p.user ?? '-'}  server ${p.server ?? '-'}  changes ${p.changesDone}/${p.changesPlanned}`,
    ),
  onChange: (c) => say(`  >> ${c.atSeconds.toFixed(1)}s  ${c.kind}: ${c.description}`),
}).catch((error: unknown) => {
  console.error(`demo failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(3);
});
if (json) console.log(JSON.stringify(summaryObject(result)));
else printSummary(result);
const lostWrites = result.move?.missingAfterMove ?? 0;
process.exit(result.stats.failed === 0 && lostWrites === 0 ? 0 : 1);

/** The summary as data (`--json`): the figures printSummary shows, unrounded. */
function summaryObject(r: PipelineResult) {
  return {
    changes: r.changes.map((c) => c.kind),
    requests: r.stats.ok + r.stats.failed,
    failedRequests: r.stats.failed,
    switchLatenciesMs: r.switchLatenciesMs,
    oldCredentialsGoneMs: r.oldCredentialsGoneMs,
    endedOnSecondInstance: r.finalServerPort === r.instancePorts.second,
    finalUser: r.finalUser ?? null,
    publishedUser: r.publishedUser,
    move: r.move ?? null,
    failures: r.stats.failures,
  };
}

function printSummary(r: PipelineResult): void {
  const ms = (values: number[], q: number) => {
    if (values.length === 0) return '-';
    const sorted = [...values].sort((a, b) => a - b);
    return `${Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!)} ms`;
  };
  const server =
    r.finalServerPort === r.instancePorts.second ? 'second instance' : `port ${r.finalServerPort ?? '-'}`;
  const rows: Array<[string, string]> = [
    ['changes made', r.changes.map((c) => c.kind).join(', ')],
    ['requests run', String(r.stats.ok + r.stats.failed)],
    ['failed requests', String(r.stats.failed)],
    ['switch latency p50 / p99 (1)', `${ms(r.switchLatenciesMs, 0.5)} / ${ms(r.switchLatenciesMs, 0.99)}`],
    [
      'old credentials in use for p50 / max (2)',
      `${ms(r.oldCredentialsGoneMs, 0.5)} / ${ms(r.oldCredentialsGoneMs, 1)}`,
    ],
    ['service ended on', `${server}, user ${r.finalUser ?? '-'} (secret: ${r.publishedUser})`],
    ...moveRows(r),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  console.log('\nSummary');
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
  console.log('  (1) secret changed → new pool serving   (2) secret changed → last old connection closed');
  for (const failure of r.stats.failures) console.log(`  failure: ${failure}`);
}

function moveRows(r: PipelineResult): Array<[string, string]> {
  const move = r.move;
  if (!move) return [];
  return [
    ['rows on the source before cutover', String(move.sourceRowsBeforeCutover ?? '-')],
    ['rows on the target after', String(move.targetRowsAfter)],
    ['acknowledged writes missing after the move', `${move.missingAfterMove} of ${move.acknowledgedWrites}`],
    [
      'write pause during the move (longest gap)',
      move.writePauseMs === null ? '-' : `${Math.round(move.writePauseMs)} ms`,
    ],
  ];
}

function positiveNumber(name: string, raw: string): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) {
    console.error(`--${name} must be a positive number, got "${raw}"\n\n${HELP}`);
    process.exit(2);
  }
  return value;
}
