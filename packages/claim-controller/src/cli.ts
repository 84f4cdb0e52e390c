#!/usr/bin/env node
/**
 * `hotload-claim-controller --config <file> [...]`: the Kubernetes controller as a process
 * (see `controller-cli.ts` for what it runs). Usage and config errors exit 2, as the folder
 * mode's `hotload-claim-reconciler` does; `--help` and `--version` print and exit 0.
 */
import { existsSync, readFileSync } from 'node:fs';
import { ConfigError, EXIT_CODES } from 'hotload-claim-reconciler';
import { isSourceError } from 'hotload-core';
import { CONTROLLER_USAGE, ControllerUsageError, runControllerCli } from './controller-cli.js';

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(CONTROLLER_USAGE);
    return EXIT_CODES.ok;
  }
  if (argv.includes('--version')) {
    console.log(packageVersion());
    return EXIT_CODES.ok;
  }
  try {
    return await runControllerCli(argv);
  } catch (error) {
    if (!(error instanceof ControllerUsageError || error instanceof ConfigError || isSourceError(error)))
      throw error;
    console.error(`error: ${error.message}\nrun "hotload-claim-controller --help" for usage`);
    return EXIT_CODES.usage;
  }
}

/**
 * This package's version, from the nearest package.json above this module (`dist/cli.js`
 * when built, `src/cli.ts` when run from source).
 */
function packageVersion(): string {
  let dir = new URL('.', import.meta.url);
  while (!existsSync(new URL('package.json', dir))) dir = new URL('..', dir);
  return (JSON.parse(readFileSync(new URL('package.json', dir), 'utf8')) as { version: string }).version;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = EXIT_CODES.claimErrors;
  },
);
