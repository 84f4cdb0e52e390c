/**
 * The parent side of separate-process rounds: each side of a comparison runs in a child
 * process of its own (the bench file run again with QPS_SIDE set; see
 * support/qps-side-process.ts), against the same server, and the parent has them measure
 * their rounds one after the other. Run in one process, the two libraries share one event
 * loop, one heap and one JIT state: postgres.js's `sql` was not inlined for either side and
 * the shared heap promoted each side's queries (36 mark-compacts a run), which charged
 * either side for the other. Apart, each side's CPU, GC and JIT are its own; the rounds
 * still alternate in time, so other load on the machine hits both alike.
 *
 * The children load the hotload packages built (their package.json exports, as users run
 * them): tsx resolves the repository's tsconfig `paths` to the TypeScript sources, which
 * tsx compiles with a keepNames wrapper around every closure, a cost the plain library
 * (JavaScript in node_modules) does not pay. TSX_TSCONFIG_PATH points the children at the
 * base tsconfig, which has no `paths`.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { QpsRound } from './qps-round.js';
import { type ParentMessage, SIDE_ENVIRONMENT, type SideMessage } from './qps-side-process.js';
import type { QpsTarget, QpsWorkload, Side } from './qps-workload.js';
import type { SideRunner } from './side-runner.js';

const BASE_TSCONFIG = fileURLToPath(new URL('../../tsconfig.base.json', import.meta.url));

/**
 * Node flags for one side's process only: QPS_TRACE_FLAGS (space-separated, e.g.
 * `--trace-gc`, `--trace-turbo-inlining`, `--cpu-prof`) when QPS_TRACE_SIDE names `side`.
 * Flags given to the bench's own node command reach both sides.
 */
function traceFlags(side: Side): string[] {
  if (process.env.QPS_TRACE_SIDE !== side) return [];
  return (process.env.QPS_TRACE_FLAGS ?? '').split(' ').filter(Boolean);
}

/** The child's next message; rejects if it exits first (its own error is on stderr). */
function nextMessage(child: ChildProcess, side: Side): Promise<SideMessage> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: SideMessage) => {
      child.off('exit', onExit);
      resolve(message);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      child.off('message', onMessage);
      reject(new Error(`the ${side} side's process exited (${signal ?? `code ${code}`}) before it answered`));
    };
    child.once('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Sends `message` and waits for the answer of type `type`. */
async function ask<Type extends SideMessage['type']>(
  child: ChildProcess,
  side: Side,
  message: ParentMessage,
  type: Type,
): Promise<Extract<SideMessage, { type: Type }>> {
  const answer = nextMessage(child, side);
  child.send(message);
  const received = await answer;
  if (received.type !== type) throw new Error(`the ${side} side answered ${received.type}, not ${type}`);
  return received as Extract<SideMessage, { type: Type }>;
}

/**
 * `side` of `workload` opened in a child process: `benchFile` run with the same node flags
 * (tsx's loader among them); resolves once the side is open.
 */
export async function sideInChildProcess(
  benchFile: string,
  workload: QpsWorkload,
  side: Side,
  target: QpsTarget,
): Promise<SideRunner> {
  const child = fork(benchFile, [], {
    env: {
      ...process.env,
      [SIDE_ENVIRONMENT.side]: side,
      [SIDE_ENVIRONMENT.workload]: workload.bench,
      [SIDE_ENVIRONMENT.target]: JSON.stringify(target),
      TSX_TSCONFIG_PATH: BASE_TSCONFIG,
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    execArgv: [...traceFlags(side), ...process.execArgv],
  });
  const ready = await nextMessage(child, side);
  if (ready.type !== 'ready') throw new Error(`the ${side} side answered ${ready.type} before ready`);
  return {
    round: async (millis): Promise<QpsRound> =>
      (await ask(child, side, { type: 'round', millis }, 'round')).round,
    async finish() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const { connections } = await ask(child, side, { type: 'finish' }, 'finished');
      await exited;
      return connections === undefined ? {} : { connections };
    },
  };
}
