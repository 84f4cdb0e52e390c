import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '../../..');

/** Which @types/pg the checked files see as `pg` (hotload-pg's sources see it too). */
export type PgTypes = 'current' | 'oldest';

const pgTypesDir: Record<PgTypes, string> = {
  current: join(here, '../node_modules/@types/pg/index.d.ts'),
  oldest: join(here, '../node_modules/pg-old-types/index.d.ts'),
};

/**
 * Type-checks `files` (paths, or in-memory sources keyed by a path in this folder) as an
 * app would, with the repository's strict settings and `pg` typed by `pgTypes`. Returns
 * the diagnostics of those files as `file(line): message`, so a test can assert both
 * that good code compiles and that wrong code does not.
 */
export function typeCheck(files: Record<string, string | undefined>, pgTypes: PgTypes): string[] {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2023.d.ts'],
    types: ['node'],
    typeRoots: [join(repo, 'node_modules/@types')],
    strict: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    baseUrl: repo,
    paths: {
      pg: [pgTypesDir[pgTypes]],
      'hotload-core': ['packages/hotload-core/src/index.ts'],
      'hotload-pg': ['packages/hotload-pg/src/index.ts'],
      'hotload-test-support': ['test/support/index.ts'],
    },
  };
  const host = ts.createCompilerHost(options);
  const inMemory = new Map(
    Object.entries(files)
      .filter((entry): entry is [string, string] => entry[1] !== undefined)
      .map(([name, text]) => [join(here, name), text]),
  );
  const { fileExists, readFile } = host;
  host.fileExists = (name) => inMemory.has(name) || fileExists.call(host, name);
  host.readFile = (name) => inMemory.get(name) ?? readFile.call(host, name);
  const getSourceFile = host.getSourceFile;
  host.getSourceFile = (name, languageVersion, ...rest) => {
    const text = inMemory.get(name);
    if (text !== undefined) return ts.createSourceFile(name, text, languageVersion);
    return getSourceFile.call(host, name, languageVersion, ...rest);
  };
  const rootNames = Object.keys(files).map((name) => join(here, name));
  const program = ts.createProgram(rootNames, options, host);
  return rootNames.flatMap((name) => {
    const source = program.getSourceFile(name);
    if (source === undefined) return [`${name}: not found`];
    return ts.getPreEmitDiagnostics(program, source).map((diagnostic) => {
      const line =
        diagnostic.start === undefined ? 0 : source.getLineAndCharacterOfPosition(diagnostic.start).line + 1;
      return `${name.slice(here.length + 1)}(${line}): ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
    });
  });
}
