#!/usr/bin/env node
// Runs the pnpm version pinned in package.json's "packageManager" field, so that a fresh
// machine with only Node and npm needs no global install: `npm test` and `npm run demo`
// call this first. npx caches the pinned pnpm after the first run.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const rootManifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const pinned = /^pnpm@(\d+\.\d+\.\d+)/.exec(rootManifest.packageManager ?? '');
if (!pinned) {
  console.error('package.json must pin pnpm in "packageManager" (e.g. "pnpm@10.34.8")');
  process.exit(1);
}

const result = spawnSync('npx', ['--yes', `pnpm@${pinned[1]}`, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, npm_config_update_notifier: 'false' },
});
process.exit(result.status ?? 1);
