/**
 * `deploy/` as a user applies it, on the REAL control plane: `kubectl apply -f deploy/`
 * succeeds, the CRD is Established, the ConfigMap, the RBAC and the Deployment exist. There
 * is no kubelet, so the test then does what one would: it runs the Deployment's container
 * (its command, args and env, read back from the API server) as a process, with the
 * ServiceAccount's token, the ConfigMap and the master password Secret projected into
 * folders by a FAKE kubelet. The controller leads through a real Lease, reconciles, serves
 * probes and metrics, follows its ConfigMap as edited with kubectl, and on SIGTERM releases
 * the Lease. A replica without the rights to its Lease says plainly that it does not lead.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  CONTROLLER_SERVICE_ACCOUNT,
  DEPLOY_DIR,
  describeOnControlPlane,
  FakeKubelet,
  isolatedNodeEnv,
  type KubeObject,
  kubectlApply,
  startSourceCli,
  useKubeTestBed,
} from 'hotload-test-support';
import { tempDir, useReconcilerCluster } from 'hotload-test-support/claims';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CLAIM_PLURAL } from '../src/claim-resource.js';
import { claimObject, claimReady, createReadyClaim } from './kube-fixtures.js';

const NAMESPACE = CONTROLLER_SERVICE_ACCOUNT.namespace;
/** Waits on a controller running as a process of its own (start-up, under load). */
const PROCESS_WAIT = { timeoutMillis: 45_000 };
const DEPLOYMENT = 'hotload-claim-reconciler';
const CONFIG_MAP = 'hotload-claim-reconciler-config';

interface Container {
  args: string[];
  env: Array<{ name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }>;
  volumeMounts: Array<{ name: string; mountPath: string }>;
}

describeOnControlPlane('deploy/ on a real API server', () => {
  const suite = useReconcilerCluster();
  const bed = useKubeTestBed();
  let work: Awaited<ReturnType<typeof tempDir>>;
  const kubelets: FakeKubelet[] = [];

  beforeAll(async () => {
    work = await tempDir('controller-cli-');
    await installImage(join(work.path, 'image'));
  }, 300_000);
  afterAll(async () => {
    for (const kubelet of kubelets) await kubelet.unmount();
    await work?.cleanup();
  });

  /** The reconciler config as a user edits deploy/03-config.yaml for this cluster. */
  function configYaml(secretsDir: string, labels: string[]): string {
    const fragments = labels.map(
      (label) =>
        `${label}:\n  host: ${suite.cluster.host}\n  port: ${suite.cluster.port}\n  username: postgres\n  sslMode: disable\n  passwordSecretRef: postgres-master\n`,
    );
    return `secretsDir: ${secretsDir}\ndefaultDeletionPolicy: Orphan\n${fragments.join('')}`;
  }

  async function applyConfig(secretsDir: string, labels: string[]): Promise<void> {
    const manifest = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CONFIG_MAP, namespace: NAMESPACE },
      data: { 'config.yaml': configYaml(secretsDir, labels) },
    };
    const applied = await bed.plane.kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
    expect(applied.stderr).toBe('');
  }

  /** The pod's filesystem: each volume mount of the container, projected under `root`. */
  async function projectVolumes(deployment: KubeObject, root: string): Promise<(path: string) => string> {
    const spec = (deployment.spec as { template: { spec: Record<string, unknown> } }).template.spec;
    const container = (spec.containers as Container[])[0]!;
    const volumes = spec.volumes as Array<{
      name: string;
      configMap?: { name: string };
      secret?: { secretName: string };
    }>;
    const inPod = (path: string) => join(root, path);
    for (const mount of container.volumeMounts) {
      const volume = volumes.find((v) => v.name === mount.name)!;
      const dir = inPod(mount.mountPath);
      await mkdir(dir, { recursive: true });
      kubelets.push(
        volume.configMap
          ? await FakeKubelet.mount(bed.objects, NAMESPACE, volume.configMap.name, dir, 'configmaps')
          : await FakeKubelet.mount(bed.objects, NAMESPACE, volume.secret!.secretName, dir),
      );
    }
    await Promise.all(kubelets.map((kubelet) => kubelet.settled()));
    return inPod;
  }

  function logReader(stream: NodeJS.ReadableStream) {
    const lines: Array<Record<string, unknown>> = [];
    const reader = createInterface({ input: stream });
    reader.on('line', (text) => {
      try {
        lines.push(JSON.parse(text));
      } catch {}
    });
    const logged = (accept: (line: Record<string, unknown>) => boolean) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const found = lines.find(accept);
        if (found) return resolve(found);
        reader.on('line', (text) => {
          try {
            const line = JSON.parse(text) as Record<string, unknown>;
            if (accept(line)) resolve(line);
          } catch {}
        });
      });
    return { lines, logged };
  }

  it('kubectl apply -f deploy/ succeeds and the Deployment runs, from its image, as its ServiceAccount', {
    timeout: 180_000,
  }, async () => {
    const applied = await kubectlApply(bed.plane, ['.']); // the whole folder, as the README says
    expect(applied).toMatch(/customresourcedefinition.*databaseclaims/);
    expect(applied).toMatch(/deployment\.apps\/hotload-claim-reconciler (created|configured)/);
    for (const resource of [
      `configmap/${CONFIG_MAP}`,
      'secret/postgres-master',
      `deployment/${DEPLOYMENT}`,
      `serviceaccount/${CONTROLLER_SERVICE_ACCOUNT.name}`,
      'rolebinding/hotload-claim-reconciler-leader-election',
    ]) {
      expect((await bed.plane.kubectl(['get', resource, '-n', NAMESPACE])).code).toBe(0);
    }
    expect((await bed.plane.kubectl(['get', 'clusterrolebinding/hotload-claim-reconciler'])).code).toBe(0);

    // The user's edits: the instance's address, and the master password.
    const podRoot = join(work.path, 'pod');
    await applyConfig(join(podRoot, '/var/run/secrets/masters'), ['atlas']);
    const secret = await bed.plane.kubectl(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'postgres-master', namespace: NAMESPACE },
        stringData: { password: suite.cluster.superuserPassword },
      }),
    );
    expect(secret.stderr).toBe('');

    // The pod, as the kubelet would run it.
    const deployment = (await bed.objects.request(
      'GET',
      `/apis/apps/v1/namespaces/${NAMESPACE}/deployments/${DEPLOYMENT}`,
    )) as KubeObject;
    const container = (deployment.spec as { template: { spec: { containers: Container[] } } }).template.spec
      .containers[0]!;
    const inPod = await projectVolumes(deployment, podRoot);
    const podName = `${DEPLOYMENT}-7d4b9c-x2x9q`;
    const env: Record<string, string> = {
      KUBECONFIG: bed.plane.writeKubeconfig('controller', await bed.controllerConfig()),
    };
    for (const variable of container.env) {
      const field = variable.valueFrom?.fieldRef?.fieldPath;
      env[variable.name] =
        variable.value ??
        (field === 'metadata.name' ? podName : field === 'metadata.namespace' ? NAMESPACE : '');
    }
    // The container's args, with its paths in the projected folders and a free port.
    const args = container.args.map((arg) =>
      arg.startsWith('--config=')
        ? `--config=${inPod(arg.slice('--config='.length))}`
        : arg.startsWith('--port=')
          ? '--port=0'
          : arg,
    );
    // The image's entrypoint (its runtime stage is installed in beforeAll), then the args.
    const [node, entrypoint] = dockerfileEntrypoint();
    expect(node).toBe('node');
    const child = spawn(process.execPath, [entrypoint!, ...args, '--host', '127.0.0.1'], {
      cwd: join(work.path, 'image'),
      env: isolatedNodeEnv(env),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const { lines, logged } = logReader(child.stderr);
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      const serving = await logged((line) => typeof line.url === 'string');
      const base = String(serving.url).replace(/\/metrics$/, '');
      await logged((line) => line.msg === 'leading');
      const lease = await bed.plane.kubectl(['get', 'lease', DEPLOYMENT, '-n', NAMESPACE, '-o', 'json']);
      expect(JSON.parse(lease.stdout).spec.holderIdentity).toBe(podName);

      // A controller process of its own on two shared cores: waits as long as a busy CI's.
      await createReadyClaim(bed.objects, 'apps', 'web', {}, undefined, PROCESS_WAIT);
      // Ready is written before the reconcile ends (records, Events): its log line is the
      // end, logged after the reconcile counters moved.
      await logged((line) => line.msg === 'claim apps/web: created');
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(/^users_created_total 2$/m);
      expect(metrics).toMatch(
        /^leader_election_master_status\{name="hotload-system\/hotload-claim-reconciler"\} 1$/m,
      );
      // The controller's own metrics, and every metric and label matcher the alerts in
      // deploy/monitoring/ use, in a real scrape.
      expect(metrics).toMatch(
        /^controller_runtime_reconcile_total\{controller="databaseclaim",result="success"\} [1-9]/m,
      );
      expect(metrics).toMatch(/^workqueue_depth\{name="databaseclaim"\} \d+$/m);
      expect(metrics).toMatch(/^dbclaim_claims\{state="created"\} 1$/m);
      expect(await alertProblems(metrics)).toEqual([]);

      // A claim for a label the config does not know yet waits; the ConfigMap edit fixes it.
      const waiting = claimReady(bed.objects, 'batch', 'False', PROCESS_WAIT);
      await bed.objects.create(
        CLAIM_PLURAL,
        'apps',
        claimObject('batch', { instanceLabel: 'reports', userName: 'batch', databaseName: 'batch' }, 'apps'),
      );
      await waiting;
      const ready = claimReady(bed.objects, 'batch', 'True', PROCESS_WAIT);
      await applyConfig(join(podRoot, '/var/run/secrets/masters'), ['atlas', 'reports']);
      await ready;
      expect(await bed.objects.get('secrets', 'apps', 'batch')).toBeDefined();

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const released = await bed.objects.get('leases', NAMESPACE, DEPLOYMENT);
      expect(released?.spec).not.toHaveProperty('holderIdentity');
      expect(lines.map((line) => JSON.stringify(line)).join('\n')).not.toMatch(/password=|"password"/);
      expect(lines.map((line) => JSON.stringify(line)).join('\n')).not.toContain(
        suite.cluster.superuserPassword,
      );
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('a replica that may not write its Lease says plainly that it does not lead, in its log and metrics', async () => {
    await bed.objects.ensureNamespace('ops');
    const child = startSourceCli(
      controllerCli,
      [
        '--config',
        join(work.path, 'pod', 'etc/hotload/config.yaml'),
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--leader-elect',
        // deploy/02-rbac.yaml grants Leases in hotload-system only.
        '--lease-namespace',
        'ops',
        '--identity',
        'pod-x',
      ],
      { env: { KUBECONFIG: bed.plane.writeKubeconfig('controller-x', await bed.controllerConfig()) } },
    );
    const { logged } = logReader(child.stderr);
    try {
      const serving = await logged((line) => typeof line.url === 'string');
      const base = String(serving.url).replace(/\/metrics$/, '');
      const warning = await logged((line) => String(line.msg).startsWith('not leading'));
      expect(warning.msg).toBe(
        'not leading: cannot acquire the Lease ops/hotload-claim-reconciler; this replica reconciles nothing until it holds it',
      );
      // The API's status and reason, not a dump of the HTTP response.
      expect(String(warning.error)).toMatch(/^Kubernetes API 403: .*leases/);
      expect(JSON.stringify(warning)).not.toMatch(/headers|authorization|Bearer/i);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(/^leader_election_master_status\{name="ops\/hotload-claim-reconciler"\} 0$/m);
      expect(metrics).toMatch(/^leader_election_errors_total\{name="ops\/hotload-claim-reconciler"\} [1-9]/m);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

/** PromQL functions and keywords that look like metric names in an expression. */
const PROMQL_WORDS = new Set([
  'sum',
  'max',
  'min',
  'avg',
  'count',
  'rate',
  'increase',
  'absent',
  'by',
  'without',
  'or',
  'and',
  'unless',
]);

/**
 * What in deploy/monitoring/alerts.yaml a scrape does not have: a metric never exported
 * (no `# TYPE` line), or a label matcher no series satisfies.
 */
async function alertProblems(scrape: string): Promise<string[]> {
  const rules = parse(await readFile(join(DEPLOY_DIR, 'monitoring', 'alerts.yaml'), 'utf8')) as {
    spec: { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
  };
  const problems: string[] = [];
  for (const { alert, expr } of rules.spec.groups.flatMap((group) => group.rules)) {
    for (const [, name, matchers] of expr.matchAll(/\b([a-z_][a-z0-9_]*)\s*(\{[^}]*\})?/g)) {
      if (!name || PROMQL_WORDS.has(name) || !name.includes('_')) continue;
      if (!new RegExp(`^# TYPE ${name} `, 'm').test(scrape))
        problems.push(`${alert}: ${name} is not exported`);
      for (const [, label, value] of (matchers ?? '').matchAll(/(\w+)="([^"]*)"/g)) {
        const series = new RegExp(`^${name}\\{[^}]*${label}="${value}"`, 'm');
        if (!series.test(scrape)) problems.push(`${alert}: no ${name} series with ${label}="${value}"`);
      }
    }
  }
  return problems;
}

const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));
const imageSource = join(repoRoot, 'deploy', 'image');
const controllerCli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const dockerfile = readFileSync(join(imageSource, 'Dockerfile'), 'utf8');

/** The runtime stage's ENTRYPOINT (exec form). */
function dockerfileEntrypoint(): string[] {
  const runtime = dockerfile.split(/^FROM /m).at(-1) ?? '';
  return JSON.parse(/^ENTRYPOINT (.+)$/m.exec(runtime)?.[1] ?? '[]') as string[];
}

/**
 * The image, as deploy/image/Dockerfile makes it (Docker cannot run here): its build
 * stage's pack and manifest (the workspace build is `npm test`'s), then its runtime stage,
 * `npm ci --omit=dev`, into `dir`.
 */
async function installImage(dir: string): Promise<void> {
  if (!existsSync(join(repoRoot, 'packages/claim-controller/dist/cli.js')))
    throw new Error('packages/claim-controller/dist is missing: run `node scripts/pnpm.mjs run build` first');
  const run = (command: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv) =>
    new Promise<void>((resolve, reject) =>
      execFile(command, args, { cwd, env }, (error) => (error ? reject(error) : resolve())),
    );
  const pnpm = [join(repoRoot, 'scripts/pnpm.mjs'), '--recursive', '--filter-prod'];
  await run(
    process.execPath,
    [...pnpm, 'hotload-claim-controller-image^...', 'pack', '--pack-destination', join(dir, 'packages')],
    repoRoot,
  );
  await run(process.execPath, [join(repoRoot, 'scripts/image-manifest.mjs'), imageSource, dir], repoRoot);
  const npm = (args: string[]) =>
    run('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline'], dir, isolatedNodeEnv());
  await npm(['install', '--package-lock-only']);
  await npm(['ci', '--omit=dev']);
}

it('the image builds from the repository alone, installs production dependencies only, and runs as a non-root numeric user', () => {
  const runtime = dockerfile.split(/^FROM /m).at(-1) ?? '';
  expect(Number(/^USER (\d+)$/m.exec(runtime)?.[1])).toBeGreaterThan(0);
  expect([...dockerfile.matchAll(/^COPY (?!--from)(\S+) /gm)].map((m) => m[1])).toEqual(['.']);
  expect(runtime).toMatch(/npm ci --omit=dev/);
  expect(existsSync(join(imageSource, 'Dockerfile.dockerignore'))).toBe(true);
});
