// Module hooks: every `import 'pg'` (the app's, hotload-pg's) resolves to the `pg-old`
// alias (the oldest pg hotload-pg supports), as it would in an app that installed that pg.
// Resolved the CommonJS way: pg 8.11's `main` is a folder, which ESM resolution refuses.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const pgOld = pathToFileURL(createRequire(import.meta.url).resolve('pg-old')).href;

export async function resolve(specifier, context, next) {
  if (specifier === 'pg' || specifier === 'pg-old') return { url: pgOld, shortCircuit: true };
  return next(specifier, context);
}
