#!/usr/bin/env node
// Writes a container image's package.json into <image dir>: the manifest of the app in
// <app dir> (the example service, the claim controller's image) with each workspace
// package replaced by the tarball `pnpm pack` made of it (in <image dir>/packages), so
// `npm ci --omit=dev` installs exactly what this commit built. An app outside this
// repository depends on the published packages instead.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [appDir, imageDir] = process.argv.slice(2);
if (!appDir || !imageDir) {
  console.error('usage: node scripts/image-manifest.mjs <app dir> <image dir with packages/*.tgz>');
  process.exit(2);
}
const service = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8'));
const dependencies = { ...service.dependencies };
for (const file of readdirSync(join(imageDir, 'packages'))) {
  // pnpm pack names a tarball <name>-<version>.tgz (these packages are unscoped).
  const name = /^(.+)-\d+\.\d+\.\d+(?:-[\w.]+)?\.tgz$/.exec(file)?.[1];
  if (name) dependencies[name] = `file:packages/${file}`;
}
const unresolved = Object.entries(dependencies).filter(([, range]) => range.startsWith('workspace:'));
if (unresolved.length > 0) {
  console.error(`no tarball in ${imageDir}/packages for ${unresolved.map(([name]) => name).join(', ')}`);
  process.exit(1);
}
const manifest = {
  name: service.name,
  version: service.version,
  private: true,
  type: service.type,
  engines: service.engines,
  ...(service.scripts?.start ? { scripts: { start: service.scripts.start } } : {}),
  dependencies,
};
writeFileSync(join(imageDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
