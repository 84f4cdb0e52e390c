import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createConsumerProject,
  lowestAndHighest8x,
  npmInstall,
  type PackedManifest,
  packPublishable,
  publishablePackageNames,
  rangeFor,
  removeProject,
  repoDevVersion,
  runIn,
  type Tarball,
} from './npm-consumer.js';

// What a stranger gets: the tarballs `pnpm pack` makes (as `pnpm publish` would upload
// them), installed with npm into a fresh project without prom-client (an optional peer),
// then loaded through import() and require() and compiled by a strict tsc with
// skipLibCheck false. `npm test` builds dist/ before the tests run.
const SETUP_MILLIS = 600_000;

describe('the packed packages, installed with npm into a fresh project', () => {
  let dir: string | undefined;
  let tarballs: Tarball[] = [];
  let pg: [string, string];
  let typesPg: [string, string];

  const project = () => {
    if (!dir) throw new Error('the consumer project was not created');
    return dir;
  };
  const manifestOf = (name: string): PackedManifest => {
    const tarball = tarballs.find((candidate) => candidate.manifest.name === name);
    if (!tarball) throw new Error(`${name} was not packed`);
    return tarball.manifest;
  };

  beforeAll(async () => {
    dir = await createConsumerProject();
    tarballs = await packPublishable(join(dir, 'tarballs'));
    // Ranges come from the packed manifests, so the test follows whatever they declare:
    // a peer range, or today's pinned dependency (one version only).
    const hotloadPg = manifestOf('hotload-pg');
    pg = await lowestAndHighest8x('pg', rangeFor(hotloadPg, 'pg') ?? '8');
    typesPg = await lowestAndHighest8x('@types/pg', rangeFor(hotloadPg, '@types/pg') ?? '8');
    await npmInstall(dir, [
      ...tarballs.map((tarball) => tarball.path),
      `knex@${rangeFor(manifestOf('hotload-knex'), 'knex') ?? 'latest'}`,
      `typescript@${await repoDevVersion('typescript')}`,
      `@types/node@${await repoDevVersion('@types/node')}`,
    ]);
  }, SETUP_MILLIS);

  afterAll(() => removeProject(dir));

  it('packs every publishable package with workspace ranges rewritten, LICENSE and CHANGELOG', async () => {
    expect(tarballs.map((tarball) => tarball.manifest.name).sort()).toEqual(await publishablePackageNames());
    const license = await readFile(new URL('../../LICENSE', import.meta.url), 'utf8');
    for (const { manifest, files } of tarballs) {
      expect(JSON.stringify(manifest), manifest.name).not.toContain('workspace:');
      expect(files, manifest.name).toEqual(
        expect.arrayContaining([
          'LICENSE',
          'CHANGELOG.md',
          'README.md',
          'dist/index.d.ts',
          'dist/index.d.cts',
        ]),
      );
    }
    const installedLicense = await readFile(join(project(), 'node_modules/hotload-pg/LICENSE'), 'utf8');
    expect(installedLicense).toBe(license);
  });

  it('installs without prom-client, and the reconciler and controller CLIs run from their bins', async () => {
    await expect(
      runIn(project(), process.execPath, ['-e', "require.resolve('prom-client')"]),
    ).rejects.toThrow(/Cannot find module 'prom-client'/);
    const help = await runIn(project(), process.execPath, [
      'node_modules/.bin/hotload-claim-reconciler',
      '--help',
    ]);
    expect(help).toContain('hotload-claim-reconciler reconcile');
    const controllerHelp = await runIn(project(), process.execPath, [
      'node_modules/.bin/hotload-claim-controller',
      '--help',
    ]);
    expect(controllerHelp).toContain('hotload-claim-controller --config');
  });

  it('the reconciler brings no Kubernetes client: only the controller depends on it', async () => {
    const manifests = Object.fromEntries(tarballs.map(({ manifest }) => [manifest.name, manifest]));
    const dependsOnKube = (name: string) =>
      Object.keys(manifests[name]?.dependencies ?? {}).includes('@kubernetes/client-node');
    expect(dependsOnKube('hotload-claim-reconciler')).toBe(false);
    expect(dependsOnKube('hotload-claim-controller')).toBe(true);
  });

  it.for(['lowest', 'highest'] as const)(
    'loads through import() and require(), and strict tsc compiles, with the %s pg 8.x allowed',
    // npm install + two tsc runs: well under a minute alone, more on a loaded CI machine.
    { timeout: SETUP_MILLIS },
    async (which, { skip }) => {
      const index = which === 'lowest' ? 0 : 1;
      if (index === 1 && pg[0] === pg[1] && typesPg[0] === typesPg[1]) {
        skip(`pg ${pg[0]} and @types/pg ${typesPg[0]} are pinned: the lowest run covered the only version`);
      }
      // The highest run also takes the newest @types/node: what a stranger's project gets,
      // since @types/pg depends on `@types/node: *`. Its typed EventEmitter once broke our
      // declarations (hotload-core's ObservableLifecycle) where the pinned one did not.
      const typesNode = which === 'lowest' ? await repoDevVersion('@types/node') : 'latest';
      await npmInstall(project(), [
        `pg@${pg[index]}`,
        `@types/pg@${typesPg[index]}`,
        `@types/node@${typesNode}`,
      ]);
      const installed = JSON.parse(await readFile(join(project(), 'node_modules/pg/package.json'), 'utf8'));
      expect(installed.version).toBe(pg[index]);

      const esm = JSON.parse(await runIn(project(), process.execPath, ['imports.mjs']));
      const cjs = JSON.parse(await runIn(project(), process.execPath, ['imports.cjs']));
      expect(esm).toEqual(cjs);
      expect(Object.keys(esm).sort()).toEqual(await publishablePackageNames());
      expect(esm['hotload-pg']).toEqual(expect.arrayContaining(['Pool', 'createPgModule']));
      expect(esm['hotload-knex']).toEqual(expect.arrayContaining(['HotloadPgClient', 'createHotloadKnex']));
      expect(esm['hotload-core']).toEqual(expect.arrayContaining(['SourceWatcher']));
      expect(esm['hotload-claim-reconciler']).toEqual(
        expect.arrayContaining(['reconcileFiles', 'ClaimReconciler']),
      );
      expect(esm['hotload-claim-controller']).toEqual(expect.arrayContaining(['ClaimController']));

      // Strict, skipLibCheck false, module nodenext: consumer.mts through the `import`
      // conditions, consumer.cts through `require`. Two compilations, as an ESM or a CJS
      // project has: one program mixing both would see hotload-knex's Knex.Config
      // augmentation twice, once per flavour of its declarations (the dual-package hazard).
      for (const config of ['tsconfig.esm.json', 'tsconfig.cjs.json']) {
        await runIn(project(), process.execPath, ['node_modules/typescript/bin/tsc', '-p', config]);
      }
    },
  );
});
