/** Runs a package's CLI from its TypeScript source (through tsx) as a child process. */
import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type ProcessOutput, processOutput } from './kube-control-plane.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** How the CLI process ended and what it printed. */
export type CliRun = ProcessOutput;

/**
 * Starts the CLI at `cliPath` (a `.ts` file) with `args` (e.g. a long-running `--watch`)
 * and extra environment variables; stdout is piped, stderr piped or inherited.
 */
export function startSourceCli(
  cliPath: string,
  args: readonly string[],
  options: { env?: Record<string, string>; stderr: 'inherit' },
): ChildProcessByStdio<null, Readable, null>;
export function startSourceCli(
  cliPath: string,
  args: readonly string[],
  options?: { env?: Record<string, string>; stderr?: 'pipe' },
): ChildProcessByStdio<null, Readable, Readable>;
export function startSourceCli(
  cliPath: string,
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

/** Runs the CLI at `cliPath` with `args` to its end, with extra environment variables. */
export function runSourceCli(
  cliPath: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  return processOutput(startSourceCli(cliPath, args, { env }));
}
