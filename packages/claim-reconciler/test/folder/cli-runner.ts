/** Runs the real CLI (TypeScript source through tsx) as a child process. */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { processOutput } from 'hotload-test-support';

const repoRoot = fileURLToPath(new URL('../../../..', import.meta.url));
const cliPath = fileURLToPath(new URL('../../src/folder/cli.ts', import.meta.url));

/** How the CLI process ended and what it printed. */
export interface CliRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Starts `hotload-claim-reconciler <args>` (e.g. a long-running `--watch`) with extra
 * environment variables; stdout is piped, stderr piped or inherited.
 */
export function startCli(
  args: readonly string[],
  options: { env?: Record<string, string>; stderr: 'inherit' },
): ChildProcessByStdio<null, Readable, null>;
export function startCli(
  args: readonly string[],
  options?: { env?: Record<string, string>; stderr?: 'pipe' },
): ChildProcessByStdio<null, Readable, Readable>;
export function startCli(
  args: readonly string[],
  { env = {}, stderr = 'pipe' }: { env?: Record<string, string>; stderr?: 'pipe' | 'inherit' } = {},
): ChildProcessByStdio<null, Readable, Readable | null> {
  // spawn's own overloads need a literal stdio; the overloads above give the exact type.
  return spawn(process.execPath, ['--import', 'tsx', cliPath, ...args], {
    cwd: repoRoot, // tsx applies the repository's tsconfig "paths" (workspace packages from src/)
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', stderr],
  }) as ChildProcessByStdio<null, Readable, Readable | null>;
}

/** Runs `hotload-claim-reconciler <args>` to its end with extra environment variables. */
export function runCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  return processOutput(startCli(args, { env }));
}

/** `reconcile --config <config> --claims <claims> --out <out>`: the arguments of one pass. */
export function reconcileArgs(config: string, claims: string, out: string): string[] {
  return ['reconcile', '--config', config, '--claims', claims, '--out', out];
}
