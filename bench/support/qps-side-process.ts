/**
 * The child side of separate-process rounds: a bench file run again by its parent with
 * QPS_SIDE set opens that one side of the named workload, then measures a round each time
 * the parent asks (over the IPC channel) and answers with the round's figures, until the
 * parent asks it to finish. Between rounds it only waits, so while the other side's process
 * runs a round this one takes no CPU.
 */
import type { QpsRound } from './qps-round.js';
import type { QpsTarget, QpsWorkload, Side } from './qps-workload.js';
import { sideInThisProcess } from './side-runner.js';

/** Environment variables through which the parent tells a child what to open. */
export const SIDE_ENVIRONMENT = { side: 'QPS_SIDE', workload: 'QPS_WORKLOAD', target: 'QPS_TARGET' } as const;

/** Parent → child. */
export type ParentMessage = { readonly type: 'round'; readonly millis: number } | { readonly type: 'finish' };

/** Child → parent. */
export type SideMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'round'; readonly round: QpsRound }
  | { readonly type: 'finished'; readonly connections?: number };

/** The side this process was started to run, or undefined when it is no side process. */
function requestedSide(): { side: Side; workload: string; target: QpsTarget } | undefined {
  const side = process.env[SIDE_ENVIRONMENT.side];
  if (side === undefined) return undefined;
  if (side !== 'plain' && side !== 'hotload') throw new Error(`QPS_SIDE is "${side}": plain or hotload`);
  const workload = process.env[SIDE_ENVIRONMENT.workload] ?? '';
  const target = JSON.parse(process.env[SIDE_ENVIRONMENT.target] ?? 'null') as QpsTarget | null;
  if (!process.send || target === null)
    throw new Error('a QPS side process needs an IPC channel and QPS_TARGET');
  return { side, workload, target };
}

const send = (message: SideMessage) =>
  new Promise<void>((resolve, reject) =>
    process.send!(message, undefined, {}, (error) => (error ? reject(error) : resolve())),
  );

/**
 * When this process is a side process: serves its side until the parent has it finish, then
 * exits; returns true. Otherwise returns false at once.
 */
export async function servedAsSideProcess(workloads: readonly QpsWorkload[]): Promise<boolean> {
  const request = requestedSide();
  if (request === undefined) return false;
  const workload = workloads.find((candidate) => candidate.bench === request.workload);
  if (!workload) throw new Error(`QPS_WORKLOAD "${request.workload}" is none of this bench's workloads`);
  const runner = await sideInThisProcess(workload, request.side, request.target);
  // Messages arrive one at a time: the parent waits for each answer before it sends again.
  process.on('message', async (message: ParentMessage) => {
    if (message.type === 'round') {
      await send({ type: 'round', round: await runner.round(message.millis) });
      return;
    }
    await send({ type: 'finished', ...(await runner.finish()) });
    // The side is ended; whatever the library left scheduled must not keep the parent waiting.
    process.exit(0);
  });
  // A parent that failed or was stopped leaves no side process running behind it.
  process.on('disconnect', () => process.exit(1));
  await send({ type: 'ready' });
  return true;
}
