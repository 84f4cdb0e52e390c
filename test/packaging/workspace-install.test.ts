import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// What `pnpm install` on a fresh clone warns about, checked from the manifests: a cycle
// among workspace packages ("There are cyclic workspace dependencies") and a bin that
// points at a build output ("Failed to create bin ... ENOENT", since nothing is built yet).
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const workspaceGlobs = readFileSync(join(repoRoot, 'pnpm-workspace.yaml'), 'utf8')
  .split('\n')
  .map((line) => /^\s+-\s+(\S+)\s*$/.exec(line)?.[1])
  .filter((glob): glob is string => glob !== undefined && !glob.startsWith('"'));

interface Manifest {
  name: string;
  bin?: string | Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function workspacePackages(): Array<{ dir: string; manifest: Manifest }> {
  const dirs = workspaceGlobs.flatMap((glob) =>
    glob.endsWith('/*')
      ? readdirSync(join(repoRoot, glob.slice(0, -2))).map((name) => join(repoRoot, glob.slice(0, -2), name))
      : [join(repoRoot, glob)],
  );
  return dirs
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) }));
}

describe('a fresh clone installs without warnings', () => {
  const packages = workspacePackages();

  it('finds the workspace packages', () => {
    expect(packages.map(({ manifest }) => manifest.name)).toEqual(
      expect.arrayContaining(['hotload-core', 'hotload-pg', 'hotload-test-support', 'hotload-demo']),
    );
  });

  it('has no cycle among workspace dependencies (of any kind)', () => {
    const names = new Set(packages.map(({ manifest }) => manifest.name));
    const edges = new Map(
      packages.map(({ manifest }) => {
        const all = {
          ...manifest.dependencies,
          ...manifest.devDependencies,
          ...manifest.optionalDependencies,
          ...manifest.peerDependencies,
        };
        return [manifest.name, Object.keys(all).filter((name) => names.has(name))];
      }),
    );
    const cycles: string[] = [];
    const visit = (name: string, path: string[]) => {
      if (path.includes(name)) {
        cycles.push([...path.slice(path.indexOf(name)), name].join(' -> '));
        return;
      }
      for (const next of edges.get(name) ?? []) visit(next, [...path, name]);
    };
    for (const name of names) visit(name, []);
    expect(cycles).toEqual([]);
  });

  it('links only bins that are committed files, not build outputs', () => {
    for (const { dir, manifest } of packages) {
      const bins = typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin ?? {});
      for (const bin of bins) {
        expect(bin, `${manifest.name} bin`).not.toMatch(/^(\.\/)?dist\//);
        expect(existsSync(join(dir, bin)), `${manifest.name} bin ${bin}`).toBe(true);
      }
    }
  });
});
