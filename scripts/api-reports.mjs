#!/usr/bin/env node
// The public API of every published package, from its built type declarations (run the
// build first), with API Extractor:
//   node scripts/api-reports.mjs           check: every export has TSDoc, and each
//                                          package's <name>.api.md matches its API
//   node scripts/api-reports.mjs --update  rewrite the .api.md reports (commit them)
// A report changes only when the public API does, so its diff in a pull request is the
// API review. The .api.json doc models go to .tmp/api-model/ (`run api:docs` turns them into
// a Markdown API reference in .tmp/api-reference/).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const update = process.argv.includes('--update');
const packagesDir = new URL('../packages/', import.meta.url);
// One configuration for every package, so a package added under packages/ is covered
// with no set-up: its missing report fails the check until `api:update` writes it.
const baseConfigFile = new URL('../api-extractor.base.json', import.meta.url).pathname;
const baseConfig = ExtractorConfig.loadFile(baseConfigFile);
let failed = false;
let undocumentedMembers = 0;
for (const dir of readdirSync(packagesDir)) {
  const packageJsonFullPath = new URL(`${dir}/package.json`, packagesDir).pathname;
  if (!existsSync(packageJsonFullPath) || JSON.parse(readFileSync(packageJsonFullPath, 'utf8')).private)
    continue;
  const config = ExtractorConfig.prepare({
    configObject: { ...baseConfig, projectFolder: new URL(dir, packagesDir).pathname },
    configObjectFullPath: baseConfigFile,
    packageJsonFullPath,
  });
  const result = Extractor.invoke(config, {
    localBuild: update,
    showVerboseMessages: false,
    messageCallback: (message) => {
      // Only problems: the "Analysis will use the bundled TypeScript version" notes are noise.
      if (message.logLevel === 'info' || message.logLevel === 'verbose') message.handled = true;
      // Every export needs TSDoc (an error). A member without it (a property, a method,
      // an event) is not an error: the report marks it `// (undocumented)`, so adding or
      // documenting one shows in the report's diff.
      if (message.messageId === 'ae-undocumented' && message.sourceFileColumn !== 1) {
        undocumentedMembers += 1;
        message.logLevel = 'none';
        message.handled = true;
      }
    },
  });
  const members = undocumentedMembers > 0 ? ` (${undocumentedMembers} members without TSDoc)` : '';
  undocumentedMembers = 0;
  // Warnings (a TSDoc syntax slip, an unresolved {@link}) are printed but do not fail.
  const reportStale = result.apiReportChanged && !update;
  if (result.errorCount === 0 && !reportStale) {
    console.log(
      `${config.packageJson?.name}: API report ${result.apiReportChanged ? 'updated' : 'up to date'}${members}`,
    );
    continue;
  }
  failed = true;
  const why = reportStale
    ? `its public API changed: review the diff of ${config.packageJson?.name}.api.md and run \`node scripts/pnpm.mjs run api:update\``
    : `${result.errorCount} error(s) above (ae-undocumented: an export without TSDoc)`;
  console.error(`${config.packageJson?.name}: ${why}`);
}
process.exit(failed ? 1 : 0);
