import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// Every package ships ESM, CommonJS and type declarations behind an exports map.
// `npm test` builds before it tests, so dist/ is present here.
const packages = [
  'hotload-core',
  'hotload-pg',
  'hotload-knex',
  'hotload-generic-pool',
  'hotload-postgres-js',
  'claim-reconciler',
  'claim-controller',
];
const root = new URL('../../packages/', import.meta.url);
const require = createRequire(import.meta.url);

describe.each(packages)('%s build', (dir) => {
  const pkgDir = new URL(`${dir}/`, root);
  const manifest = JSON.parse(readFileSync(new URL('package.json', pkgDir), 'utf8'));

  it('declares ESM and CommonJS entry points with types, and node >= 20.19', () => {
    expect(manifest.exports['.'].import.default).toBe('./dist/index.js');
    expect(manifest.exports['.'].require.default).toBe('./dist/index.cjs');
    expect(manifest.engines.node).toBe('>=20.19');
    for (const file of ['dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts']) {
      expect(existsSync(new URL(file, pkgDir)), `${dir}/${file}`).toBe(true);
    }
  });

  it('loads through both require() and import()', async () => {
    const fromRequire = require(new URL('dist/index.cjs', pkgDir).pathname);
    const fromImport = await import(new URL('dist/index.js', pkgDir).href);
    expect(Object.keys(fromRequire).sort()).toEqual(Object.keys(fromImport).sort());
  });
});

describe('hotload-pg build: the module as pg is', () => {
  const pkgDir = new URL('hotload-pg/', root);

  it("require('hotload-pg').native is null and not enumerable, as require('pg').native; the ESM entry has none, as pg's", () => {
    const fromRequire = require(new URL('dist/index.cjs', pkgDir).pathname);
    const pg = require('pg');
    expect(fromRequire.native).toBe(pg.native);
    expect(fromRequire.native).toBeNull();
    expect(Object.keys(fromRequire)).not.toContain('native');
    expect(Object.keys(pg)).not.toContain('native');
    // In plain Node, not through vitest's module runner (which lends ES modules a `module`).
    const esmHasNative = execFileSync(process.execPath, [
      '--input-type=module',
      '-e',
      `console.log('native' in (await import(${JSON.stringify(new URL('dist/index.js', pkgDir).href)})))`,
    ]);
    expect(esmHasNative.toString().trim()).toBe('false');
  });
});
