/**
 * The controller's test bed on a REAL control plane: kube-apiserver and etcd (and
 * kube-controller-manager for garbage collection), with `deploy/`'s namespace, CRD and
 * RBAC applied by `kubectl apply` as a user applies them. The controller under test gets
 * the token of the ServiceAccount `deploy/02-rbac.yaml` binds, never admin rights: a verb
 * missing from the ClusterRole fails the test that needs it.
 *
 * {@link useKubeTestBed} registers the hooks; {@link describeOnControlPlane} declares a
 * suite that needs the control plane, reported as not run (with the reason) where there is
 * none, and failed instead when `HOTLOAD_REQUIRE_CONTROL_PLANE=1` (CI).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe } from 'vitest';
import {
  type ControlPlaneOptions,
  KubeControlPlane,
  locateControlPlane,
  startControlPlane,
} from './kube-control-plane.js';
import { KubeObjects, type KubeResourceType } from './kube-objects.js';

/** The repository's `deploy/` folder. */
export const DEPLOY_DIR = fileURLToPath(new URL('../../deploy/', import.meta.url));

/** The ServiceAccount the controller runs as (deploy/02-rbac.yaml). */
export const CONTROLLER_SERVICE_ACCOUNT = { namespace: 'hotload-system', name: 'hotload-claim-reconciler' };

/** The DatabaseClaim resource (deploy/01-crd.yaml). */
export const CLAIM_RESOURCE: KubeResourceType = {
  group: 'persistance.atlas.infoblox.com',
  version: 'v1',
  plural: 'databaseclaims',
  namespaced: true,
};

/** Marks the title of a suite not run for want of a control plane; the summary counts these. */
export const NOT_RUN_MARK = '[not run: ';

/** A running test bed. */
export interface KubeTestBed {
  readonly plane: KubeControlPlane;
  /** The test's admin view, emitting `change` for claims, Secrets, Events, Leases and ConfigMaps. */
  readonly objects: KubeObjects;
  /** A KubeConfig of the controller's ServiceAccount (`server` overridable, e.g. a proxy). */
  controllerConfig(server?: string): Promise<KubeConfig>;
}

/** Applies `files` of `deploy/` with kubectl; throws with kubectl's output on failure. */
export async function kubectlApply(plane: KubeControlPlane, files: readonly string[]): Promise<string> {
  const args = ['apply', ...files.flatMap((file) => ['-f', join(DEPLOY_DIR, file)])];
  const result = await plane.kubectl(args);
  if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr}`);
  return result.stdout;
}

/** Starts a control plane with deploy/'s namespace, CRD and RBAC. */
export async function startKubeTestBed(
  options: ControlPlaneOptions & { controllerManager?: boolean } = {},
): Promise<KubeTestBed> {
  const plane = await startControlPlane(options);
  try {
    await kubectlApply(plane, ['00-namespace.yaml', '01-crd.yaml', '02-rbac.yaml']);
    const established = await plane.kubectl([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      `crd/${CLAIM_RESOURCE.plural}.${CLAIM_RESOURCE.group}`,
    ]);
    if (established.code !== 0) throw new Error(`CRD not Established: ${established.stderr}`);
    if (options.controllerManager !== false) plane.startControllerManager();
    const objects = await KubeObjects.open(
      plane.adminConfig(),
      [CLAIM_RESOURCE],
      [CLAIM_RESOURCE.plural, 'secrets', 'events', 'leases', 'configmaps'],
    );
    const { namespace, name } = CONTROLLER_SERVICE_ACCOUNT;
    return {
      plane,
      objects,
      async controllerConfig(server?: string) {
        return plane.configFor(name, await plane.serviceAccountToken(namespace, name), server);
      },
    };
  } catch (error) {
    await plane.stop();
    throw error;
  }
}

/** The test bed of the enclosing file: started in `beforeAll`, stopped in `afterAll`. */
export function useKubeTestBed(
  options: ControlPlaneOptions & { controllerManager?: boolean } = {},
): KubeTestBed {
  let bed: KubeTestBed | undefined;
  beforeAll(async () => {
    bed = await startKubeTestBed(options);
  }, 120_000);
  afterAll(async () => {
    bed?.objects.close();
    await bed?.plane.stop();
  });
  const ready = (): KubeTestBed => {
    if (!bed) throw new Error('useKubeTestBed: read before its beforeAll ran');
    return bed;
  };
  return {
    get plane() {
      return ready().plane;
    },
    get objects() {
      return ready().objects;
    },
    controllerConfig: (server) => ready().controllerConfig(server),
  };
}

/**
 * `describe` for a suite that needs the real control plane (and the optional binaries in
 * `needs`, e.g. kube-controller-manager, which envtest's assets lack). Without, the suite is
 * skipped under a title saying why (counted as "not run" in the summary line), or, with
 * `HOTLOAD_REQUIRE_CONTROL_PLANE=1`, declared so that it fails with the reason.
 */
export function describeOnControlPlane(
  name: string,
  body: () => void,
  { needs = [] }: { needs?: readonly string[] } = {},
): void {
  const located = locateControlPlane();
  const absent = 'dir' in located ? needs.filter((binary) => !existsSync(join(located.dir, binary))) : [];
  const missing =
    'missing' in located
      ? located.missing
      : absent.length > 0
        ? `${located.dir} has no ${absent.join(', ')}`
        : undefined;
  if (missing === undefined) {
    describe(name, body);
  } else if (process.env.HOTLOAD_REQUIRE_CONTROL_PLANE === '1') {
    describe(name, () => {
      beforeAll(() => {
        throw new Error(`HOTLOAD_REQUIRE_CONTROL_PLANE=1 but ${missing}`);
      });
      body();
    });
  } else {
    describe.skip(`${name} ${NOT_RUN_MARK}${missing}]`, body);
  }
}

export { KubeControlPlane };
