/**
 * The folder mode's claims: every `*.yaml`/`*.yml` file under the claims folder, parsed
 * (`claim-schema.ts`) and checked against what the output folder can hold.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type DatabaseClaim,
  type LoadedClaims,
  parseClaims,
  rejectDuplicates,
} from '../core/claim-schema.js';
import type { Problem } from '../core/problems.js';
import { STATUS_SUFFIX } from './folder-status-store.js';

/** Loads every `*.yaml`/`*.yml` file under `dir` (recursively, in name order). */
export async function loadClaimsFromDirectory(dir: string): Promise<LoadedClaims> {
  const files = (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile() && /\.ya?ml$/i.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  const claims: DatabaseClaim[] = [];
  const problems: Problem[] = [];
  for (const file of files) {
    const loaded = parseClaims(await readFile(file, 'utf8'), file);
    claims.push(...loaded.claims);
    problems.push(...loaded.problems);
  }
  return rejectDuplicates(
    claims.filter((claim) => fitsOutputFolder(claim, problems)),
    problems,
  );
}

/**
 * A secret folder may not be named like a status file (`<secretName>.status.json` sits
 * beside it): such a claim is refused with a problem.
 */
function fitsOutputFolder(claim: DatabaseClaim, problems: Problem[]): boolean {
  if (!claim.secretName.includes(STATUS_SUFFIX)) return true;
  problems.push({
    severity: 'error',
    file: claim.file,
    path: 'spec.secretName',
    claim: claim.key,
    message: `must not contain "${STATUS_SUFFIX}" (the status file suffix)`,
  });
  return false;
}
