/**
 * The demo's command line, parsed without side effects so it can be tested: what to run,
 * the help, or a usage error (one line; main.ts prints it and exits 2).
 */
import { parseArgs } from 'node:util';

/** What the command line asks for. */
export type DemoCommand =
  | {
      readonly kind: 'run';
      readonly durationSeconds: number;
      readonly rotations: number;
      readonly concurrency: number;
      /** Print only the summary, as one JSON object. */
      readonly json: boolean;
    }
  | { readonly kind: 'help' }
  | { readonly kind: 'usage-error'; readonly message: string };

export const DEMO_HELP = `Usage: npm run demo -- [options]

Runs the whole pipeline on embedded PostgreSQL: a DatabaseClaim is reconciled into a
database, login users and a kubelet-style secret folder; the example service reads it
through hotload-pg; concurrent HTTP load runs while passwords rotate (switching the login
user _a <-> _b) and the database moves to a second PostgreSQL instance, its data migrated
online (logical replication) so every acknowledged write is still there.

Options:
  --duration <seconds>   how long the load runs (default 20)
  --rotations <n>        password rotations during the run, 0 or more (default 4; 0: only the move)
  --concurrency <n>      concurrent request loops (default 8)
  --json                 print only the summary, as one JSON object
  -h, --help             show this help

Exit status: 0 when every request succeeded and no acknowledged write was lost in the
move, 1 otherwise, 2 on a usage error,
3 when the pipeline could not be set up or a change could not be made.`;

/** Parses the demo's arguments (`process.argv.slice(2)`). */
export function parseDemoCommand(args: readonly string[]): DemoCommand {
  let values: { duration: string; rotations: string; concurrency: string; json: boolean; help: boolean };
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        duration: { type: 'string', default: '20' },
        rotations: { type: 'string', default: '4' },
        concurrency: { type: 'string', default: '8' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    }));
  } catch (error) {
    // parseArgs' messages name the option ("Unknown option '--x'..."): keep the first sentence.
    return usageError(firstSentence(error instanceof Error ? error.message : String(error)));
  }
  if (values.help) return { kind: 'help' };
  const duration = Number(values.duration);
  if (!Number.isFinite(duration) || duration <= 0) {
    return usageError(`--duration must be a positive number of seconds, got "${values.duration}"`);
  }
  const rotations = wholeNumber(values.rotations, 0);
  if (rotations === undefined)
    return usageError(`--rotations must be a whole number >= 0, got "${values.rotations}"`);
  const concurrency = wholeNumber(values.concurrency, 1);
  if (concurrency === undefined) {
    return usageError(`--concurrency must be a whole number >= 1, got "${values.concurrency}"`);
  }
  return { kind: 'run', durationSeconds: duration, rotations, concurrency, json: values.json };
}

function wholeNumber(raw: string, min: number): number | undefined {
  const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  return Number.isSafeInteger(value) && value >= min ? value : undefined;
}

function firstSentence(message: string): string {
  return message.split(/\.\s/)[0]?.replace(/\.$/, '') ?? message;
}

function usageError(message: string): DemoCommand {
  return { kind: 'usage-error', message };
}
