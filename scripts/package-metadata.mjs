#!/usr/bin/env node
// Release metadata of every published package (the non-private ones under packages/),
// derived from the root package.json and LICENSE so a new package gets it with one command:
//   node scripts/package-metadata.mjs          write what is missing or stale
//   node scripts/package-metadata.mjs --check  list it and exit 1 (the packaging test runs this)
// Per package: LICENSE (the root's text), CHANGELOG.md (changesets appends to it),
// license, repository (with the package's directory), homepage, bugs, publishConfig
// (public, with provenance) and `files` carrying dist, README.md, CHANGELOG.md, LICENSE.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const check = process.argv.includes('--check');
const rootManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const license = readFileSync(join(root, 'LICENSE'), 'utf8');
const repositoryUrl = rootManifest.repository.url;
const webUrl = repositoryUrl.replace(/^git\+/, '').replace(/\.git$/, '');
const problems = [];

for (const dir of readdirSync(join(root, 'packages'))) {
  const packageDir = join(root, 'packages', dir);
  const manifestFile = join(packageDir, 'package.json');
  if (!existsSync(manifestFile)) continue;
  const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  if (manifest.private) continue;
  const directory = `packages/${dir}`;
  const wanted = {
    license: rootManifest.license,
    repository: { type: 'git', url: repositoryUrl, directory },
    homepage: `${webUrl}/tree/main/${directory}#readme`,
    bugs: rootManifest.bugs,
    publishConfig: { access: 'public', provenance: true },
    files: [...new Set([...(manifest.files ?? []), 'dist', 'README.md', 'CHANGELOG.md', 'LICENSE'])],
  };
  const stale = Object.keys(wanted).filter(
    (key) => JSON.stringify(manifest[key]) !== JSON.stringify(wanted[key]),
  );
  if (stale.length > 0) {
    problems.push(`${directory}/package.json: ${stale.join(', ')}`);
    if (!check) writeFileSync(manifestFile, `${JSON.stringify({ ...manifest, ...wanted }, null, 2)}\n`);
  }
  const licenseFile = join(packageDir, 'LICENSE');
  if (!existsSync(licenseFile) || readFileSync(licenseFile, 'utf8') !== license) {
    problems.push(`${directory}/LICENSE`);
    if (!check) writeFileSync(licenseFile, license);
  }
  const changelog = join(packageDir, 'CHANGELOG.md');
  if (!existsSync(changelog)) {
    problems.push(`${directory}/CHANGELOG.md`);
    if (!check) writeFileSync(changelog, `# ${manifest.name}\n`);
  }
}

if (check && problems.length > 0) {
  console.error(
    `release metadata missing or stale (run node scripts/package-metadata.mjs):\n  ${problems.join('\n  ')}`,
  );
  process.exit(1);
}
for (const problem of check ? [] : problems) console.log(`updated ${problem}`);
