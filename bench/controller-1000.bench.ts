/**
 * The Kubernetes controller with 1,000 DatabaseClaims (FAKE API server in process, real
 * PostgreSQL): time from the first claim created to every claim Ready (database, users,
 * verified login, Secret, status), and, for comparison in the same run, one folder-mode
 * pass over the same number of claims on a fresh cluster. CLAIMS=<n> runs another size.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLAIM_GROUP,
  CLAIM_PLURAL,
  CLAIM_VERSION,
  ClaimController,
  KubeClaimReconciler,
  kubeClientsForUrl,
  parseClaims,
  parseReconcilerConfig,
  Reconciler,
} from 'hotload-claim-reconciler';
import { type FakeChange, FakeKubeApiServer, type PostgresCluster, startCluster } from 'hotload-test-support';

const CLAIMS = Number(process.env.CLAIMS ?? 1000);
const WORKERS = 8;

async function configFor(cluster: PostgresCluster, work: string) {
  const passwordFile = join(work, `master-${cluster.port}`);
  await writeFile(passwordFile, cluster.superuserPassword, { mode: 0o600 });
  return parseReconcilerConfig(
    `bench:\n  host: ${cluster.host}\n  port: ${cluster.port}\n  username: postgres\n  passwordFile: ${passwordFile}\n`,
    join(work, 'config.yaml'),
  );
}

async function controllerSeconds(work: string): Promise<{ seconds: number; apiWrites: number }> {
  const cluster = await startCluster();
  const fake = await FakeKubeApiServer.start([
    {
      group: CLAIM_GROUP,
      version: CLAIM_VERSION,
      plural: CLAIM_PLURAL,
      kind: 'DatabaseClaim',
      statusSubresource: true,
    },
  ]);
  const reconciler = new KubeClaimReconciler({
    config: await configFor(cluster, work),
    maxConnectionsPerInstance: WORKERS,
  });
  const controller = new ClaimController({
    clients: kubeClientsForUrl(fake.url),
    reconciler,
    workers: WORKERS,
  });
  try {
    await controller.start();
    const ready = new Set<string>();
    const allReady = new Promise<void>((resolve) => {
      fake.on('change', ({ plural, object }: FakeChange) => {
        const conditions = (
          object.status as { conditions?: Array<{ type: string; status: string }> } | undefined
        )?.conditions;
        if (plural !== CLAIM_PLURAL || !conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
          return;
        ready.add(object.metadata.name);
        if (ready.size === CLAIMS) resolve();
      });
    });
    const started = performance.now();
    for (let i = 0; i < CLAIMS; i++) {
      fake.create(CLAIM_PLURAL, `team-${i % 10}`, {
        apiVersion: `${CLAIM_GROUP}/${CLAIM_VERSION}`,
        kind: 'DatabaseClaim',
        metadata: { name: `app-${i}` },
        spec: { instanceLabel: 'bench', userName: `app_${i}`, databaseName: `app_${i}` },
      });
    }
    await allReady;
    return { seconds: (performance.now() - started) / 1000, apiWrites: fake.audit.length };
  } finally {
    await controller.stop();
    await reconciler.close();
    await fake.close();
    await cluster.stop();
  }
}

async function folderSeconds(work: string): Promise<number> {
  const cluster = await startCluster();
  try {
    const yaml = Array.from(
      { length: CLAIMS },
      (_, i) =>
        `apiVersion: persistance.atlas.infoblox.com/v1\nkind: DatabaseClaim\nmetadata:\n  name: app-${i}\n  namespace: team-${i % 10}\nspec:\n  databaseName: app_${i}\n  userName: app_${i}\n  instanceLabel: bench\n`,
    ).join('---\n');
    const { claims } = parseClaims(yaml, 'bench.yaml');
    const reconciler = new Reconciler({
      config: await configFor(cluster, work),
      outputDir: join(work, 'out'),
      concurrency: WORKERS,
    });
    const started = performance.now();
    const { outcomes } = await reconciler.reconcile(claims);
    const failed = outcomes.filter((o) => o.result === 'error');
    if (failed.length > 0) throw new Error(`${failed.length} claims failed: ${failed[0]?.error}`);
    return (performance.now() - started) / 1000;
  } finally {
    await cluster.stop();
  }
}

const work = await mkdtemp(join(tmpdir(), 'controller-bench-'));
try {
  const controller = await controllerSeconds(work);
  const folder = await folderSeconds(work);
  console.log(
    JSON.stringify({
      bench: 'controller-1000',
      claims: CLAIMS,
      workers: WORKERS,
      seconds_to_all_ready: Number(controller.seconds.toFixed(3)),
      claims_per_second: Number((CLAIMS / controller.seconds).toFixed(1)),
      api_writes: controller.apiWrites,
      folder_pass_seconds: Number(folder.toFixed(3)),
      ratio_vs_folder_pass: Number((controller.seconds / folder).toFixed(2)),
    }),
  );
} finally {
  await rm(work, { recursive: true, force: true });
}
