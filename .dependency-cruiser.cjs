/**
 * Import rules, checked by `npm test` (`pnpm run deps:check`). Type-only imports count:
 * a circle through types still ties the modules' meanings together.
 * @type {import('dependency-cruiser').IConfiguration}
 */
const DRIVERS = ['hotload-pg', 'hotload-knex', 'hotload-generic-pool', 'hotload-postgres-js'];
const RECONCILER = '^packages/claim-reconciler/src/';
// The leaves migration/ may use: value-free types and small utilities that import nothing local.
const MIGRATION_LEAVES = `${RECONCILER}core/(binding|sql-identifiers|scram-verifier|password-generator|role-marker|ssl-mode|seed-source)\\.ts$`;

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle (type-only ones included): move the shared type to a module of its own.',
      from: { path: '^packages/[^/]+/src/' },
      to: { circular: true },
    },
    {
      name: 'reconciler-without-kubernetes',
      severity: 'error',
      comment: 'Folder-mode users install and load no Kubernetes client: only hotload-claim-controller may.',
      from: { path: RECONCILER },
      to: { path: ['@kubernetes/client-node', '^packages/claim-controller/'] },
    },
    {
      name: 'core-not-to-folder',
      severity: 'error',
      comment: 'The per-claim core is shared by both modes; folder mode plugs in through its ports.',
      from: { path: `${RECONCILER}core/` },
      to: { path: `${RECONCILER}folder/` },
    },
    {
      name: 'migration-imports-only-leaves',
      severity: 'error',
      comment: 'The migration engine is shared by both modes and knows nothing of the reconciler core.',
      from: { path: `${RECONCILER}migration/` },
      to: { path: `${RECONCILER}(core|folder)/`, pathNot: MIGRATION_LEAVES },
    },
    {
      name: 'migration-leaves-stay-leaves',
      severity: 'error',
      comment:
        'A leaf the migration engine uses may import other leaves only, not the rest of the reconciler.',
      from: { path: MIGRATION_LEAVES },
      to: { path: RECONCILER, pathNot: MIGRATION_LEAVES },
    },
    ...DRIVERS.map((driver) => ({
      name: `${driver}-not-to-another-driver`,
      severity: 'error',
      comment: 'A driver builds on hotload-core alone; what two drivers share belongs in hotload-core.',
      from: { path: `^packages/${driver}/src/` },
      to: { path: DRIVERS.filter((other) => other !== driver).map((other) => `^packages/${other}/`) },
    })),
    {
      name: 'core-library-not-to-drivers',
      severity: 'error',
      comment: 'hotload-core is what every driver builds on; it knows none of them.',
      from: { path: '^packages/hotload-core/src/' },
      to: { path: ['^packages/(hotload-pg|hotload-knex|hotload-generic-pool|hotload-postgres-js|claim-)'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['/dist/', '/test/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
