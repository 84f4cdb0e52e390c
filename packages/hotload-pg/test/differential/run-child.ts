/**
 * Runs a differential scenario in a child process (for what only a process shows: whether
 * it exits, an uncaught exception) and collects the JSON lines it prints.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * Runs `script` (TypeScript, through tsx) with `args`; resolves with its output lines, then
 * `{ code }`, or 'still running' if it had not exited after `hangGuardMillis` (it is killed
 * then). The guard is not a timing assertion: a child still running then never finishes.
 */
export function runChild(script: URL, args: readonly string[], hangGuardMillis: number): Promise<unknown[]> {
  return new Promise((resolve) => {
    // tsx resolves the workspace packages through tsconfig "paths", as vitest does.
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(script), ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    const guard = setTimeout(() => child.kill('SIGKILL'), hangGuardMillis);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      const lines = out
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as unknown);
      resolve(signal === 'SIGKILL' ? [...lines, 'still running'] : [...lines, { code }]);
    });
  });
}
