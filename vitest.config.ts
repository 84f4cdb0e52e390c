import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const fromRoot = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// Tests import every workspace package from its TypeScript source, so a test run never
// depends on a stale build. The same mapping is in tsconfig.json "paths".
export default defineConfig({
  resolve: {
    alias: {
      'hotload-core': fromRoot('./packages/hotload-core/src/index.ts'),
      'hotload-pg': fromRoot('./packages/hotload-pg/src/index.ts'),
      'hotload-knex': fromRoot('./packages/hotload-knex/src/index.ts'),
      'hotload-generic-pool': fromRoot('./packages/hotload-generic-pool/src/index.ts'),
      'hotload-postgres-js': fromRoot('./packages/hotload-postgres-js/src/index.ts'),
      'hotload-claim-reconciler': fromRoot('./packages/claim-reconciler/src/index.ts'),
      'hotload-claim-controller': fromRoot('./packages/claim-controller/src/index.ts'),
      // Before the package's own entry: the first alias that matches wins.
      'hotload-test-support/claims': fromRoot('./test/support/claim-fixtures.ts'),
      'hotload-test-support': fromRoot('./test/support/index.ts'),
    },
  },
  test: {
    include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    globalSetup: ['./test/support/global-setup.ts'],
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
