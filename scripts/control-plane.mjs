#!/usr/bin/env node
// Provides the real Kubernetes control plane the controller's tests run against:
// kube-apiserver, kube-controller-manager, kubectl and etcd.
//
// - KUBEBUILDER_ASSETS (the envtest convention: a folder holding kube-apiserver, etcd and
//   kubectl) wins when set: a user who has envtest's binaries needs no Go. envtest ships
//   no kube-controller-manager; the tests that need the garbage collector then say so.
// - Otherwise the binaries are built with Go from the pinned modules in
//   test/control-plane/go.mod into a cache folder outside the checkout, keyed by go.sum
//   (so by every version), and reused while present. The first, cold build downloads
//   ~600 MB of modules and compiles for ~15 min on 2 cores; later runs take < 1 s.
// - With neither, it says why and exits 0, and the tests that need the control plane are
//   reported as not run; with HOTLOAD_REQUIRE_CONTROL_PLANE=1 (set by .ci/run) it fails.
//
// `node scripts/control-plane.mjs` builds (or finds) and prints the folder; imported, it
// exports the same lookup for the test harness.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const moduleDir = fileURLToPath(new URL('../test/control-plane/', import.meta.url));

/** Binary name → the Go package it is built from (the `tool` lines of go.mod). */
const PACKAGES = {
  etcd: 'go.etcd.io/etcd/server/v3',
  'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
  'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
  kubectl: 'k8s.io/kubernetes/cmd/kubectl',
};

/** The binaries every control-plane test needs; kube-controller-manager is optional. */
export const REQUIRED_BINARIES = ['etcd', 'kube-apiserver', 'kubectl'];

/** Kubernetes and etcd versions pinned in go.mod, for folder names and messages. */
export function pinnedVersions() {
  const goMod = readFileSync(join(moduleDir, 'go.mod'), 'utf8');
  const kubernetes = /k8s\.io\/kubernetes (v[\w.-]+)/.exec(goMod)?.[1] ?? 'unknown';
  const goSum = readFileSync(join(moduleDir, 'go.sum'), 'utf8');
  const etcd = /go\.etcd\.io\/etcd\/server\/v3 (v[\w.-]+) /.exec(goSum)?.[1] ?? 'unknown';
  return { kubernetes, etcd };
}

/** The cache folder for the pinned versions (outside the checkout, shared by clones). */
export function cacheFolder() {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  const hash = createHash('sha256')
    .update(readFileSync(join(moduleDir, 'go.mod')))
    .update(readFileSync(join(moduleDir, 'go.sum')))
    .digest('hex')
    .slice(0, 12);
  const { kubernetes, etcd } = pinnedVersions();
  return join(base, 'hotload-node', 'control-plane', `kubernetes-${kubernetes}-etcd-${etcd}-${hash}`);
}

/**
 * Where the binaries are: `{ dir, source }` with source 'KUBEBUILDER_ASSETS' or 'cache',
 * or `{ missing }` saying why there are none. Builds nothing.
 */
export function locateControlPlane() {
  const assets = process.env.KUBEBUILDER_ASSETS;
  if (assets) {
    const absent = REQUIRED_BINARIES.filter((name) => !existsSync(join(assets, name)));
    if (absent.length > 0) return { missing: `KUBEBUILDER_ASSETS=${assets} has no ${absent.join(', ')}` };
    return { dir: assets, source: 'KUBEBUILDER_ASSETS' };
  }
  const dir = cacheFolder();
  if (existsSync(join(dir, 'complete'))) return { dir, source: 'cache' };
  return {
    missing: `no KUBEBUILDER_ASSETS and no built control plane in ${dir} (run: node scripts/control-plane.mjs)`,
  };
}

function goVersion() {
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  return go.status === 0 ? go.stdout.trim() : undefined;
}

/** Builds the binaries into the cache folder; returns the folder. */
function build() {
  const dir = cacheFolder();
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const started = Date.now();
  console.error(
    `control plane: building ${Object.keys(PACKAGES).join(', ')} with ${goVersion()} into ${dir}`,
  );
  for (const [name, pkg] of Object.entries(PACKAGES)) {
    const result = spawnSync('go', ['build', '-o', join(partial, name), pkg], {
      cwd: moduleDir,
      stdio: 'inherit',
      // The module is pinned by go.mod and go.sum: never let a build edit them.
      env: { ...process.env, GOFLAGS: `${process.env.GOFLAGS ?? ''} -mod=readonly`.trim(), CGO_ENABLED: '0' },
    });
    if (result.status !== 0) throw new Error(`go build ${pkg} failed (exit ${result.status})`);
  }
  writeFileSync(join(partial, 'complete'), `${JSON.stringify({ ...pinnedVersions(), go: goVersion() })}\n`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  console.error(`control plane: built in ${Math.round((Date.now() - started) / 1000)} s`);
  return dir;
}

function main() {
  const found = locateControlPlane();
  if ('dir' in found) {
    console.log(found.dir);
    return 0;
  }
  const required = process.env.HOTLOAD_REQUIRE_CONTROL_PLANE === '1';
  if (process.env.KUBEBUILDER_ASSETS || goVersion() === undefined) {
    const why = process.env.KUBEBUILDER_ASSETS
      ? found.missing
      : 'Go is not installed and KUBEBUILDER_ASSETS is not set';
    console.error(`control plane: ${why}; the tests that need a real kube-apiserver will not run`);
    return required ? 1 : 0;
  }
  try {
    console.log(build());
    return 0;
  } catch (error) {
    console.error(`control plane: ${error.message}; the tests that need a real kube-apiserver will not run`);
    return required ? 1 : 0;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exit(main());
