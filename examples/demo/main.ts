/**
 * `npm run demo`: credentials change under a running service and nothing fails.
 * See pipeline.ts for what happens; this file is the terminal front end.
 */
import { DEMO_HELP, parseDemoCommand } from './cli-options.js';
import { type PipelineResult, runPipelineDemo } from './pipeline.js';

const command = parseDemoCommand(process.argv.slice(2));
if (command.kind === 'help') {
  console.log(DEMO_HELP);
  process.exit(0);
}
if (command.kind === 'usage-error') {
  console.error(`demo: ${command.message} (npm run demo -- --help lists the options)`);
  process.exit(2);
}
const { durationSeconds, rotations, concurrency } = command;

const json = command.json;
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
    [
      'cutover settings',
      Object.entries(move.cutover.settings)
        .map(([key, value]) => `${key} ${value}`)
        .join(', '),
    ],
    [
      'cutover started by',
      `${move.cutover.strategyUsed ?? '-'} after ${move.cutover.secondsStreamingToCutover?.toFixed(1) ?? '-'} s of streaming` +
        `${move.cutover.longestWritePauseMillis === null ? '' : `, fence ${move.cutover.longestWritePauseMillis} ms`}` +
        ` (synchronous apply: ${move.cutover.synchronousApply ?? '-'})`,
    ],
  ];
}
