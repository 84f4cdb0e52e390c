/** Runs the reconciler's real CLI (TypeScript source through tsx) as a child process. */
import type { ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type CliRun, runSourceCli, startSourceCli } from 'hotload-test-support';

export type { CliRun };

const cliPath = fileURLToPath(new URL('../../src/folder/cli.ts', import.meta.url));

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
  options: { env?: Record<string, string>; stderr?: 'pipe' | 'inherit' } = {},
): ChildProcessByStdio<null, Readable, Readable | null> {
  return options.stderr === 'inherit'
    ? startSourceCli(cliPath, args, { env: options.env, stderr: 'inherit' })
    : startSourceCli(cliPath, args, { env: options.env });
}

/** Runs `hotload-claim-reconciler <args>` to its end with extra environment variables. */
export function runCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runSourceCli(cliPath, args, env);
}

/** `reconcile --config <config> --claims <claims> --out <out>`: the arguments of one pass. */
export function reconcileArgs(config: string, claims: string, out: string): string[] {
  return ['reconcile', '--config', config, '--claims', claims, '--out', out];
}
