/**
 * `hotload-claim-reconciler controller` as a process (FAKE API server, real PostgreSQL):
 * it leads through a Lease, reconciles claims, serves /metrics, /healthz and /readyz on one
 * port, follows a ConfigMap-style config folder (kubelet `..data` swap), and on SIGTERM
 * stops and releases the Lease.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { AtomicSecretWriter } from 'hotload-core';
import type { FakeKubeApiServer } from 'hotload-test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLAIM_PLURAL } from '../../src/kubernetes/claim-resource.js';
import { startCli } from '../cli-runner.js';
import { configYaml, tempDir, useReconcilerCluster, writeMasterPassword } from '../fixtures.js';
import { claimObject, claimReady, createReadyClaim, startFakeApi } from './kube-fixtures.js';

const suite = useReconcilerCluster();
let fake: FakeKubeApiServer;
let work: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  fake = await startFakeApi();
  work = await tempDir('controller-cli-');
});
afterAll(async () => {
  await fake?.close();
  await work?.cleanup();
});

function kubeconfig(server: string): string {
  return `apiVersion: v1
kind: Config
clusters: [{ name: fake, cluster: { server: "${server}", insecure-skip-tls-verify: true } }]
users: [{ name: test, user: { token: fake-token } }]
contexts: [{ name: fake, context: { cluster: fake, user: test } }]
current-context: fake
`;
}

describe('the controller command', () => {
  it('leads, reconciles, serves probes and metrics, follows its ConfigMap, releases the Lease on SIGTERM', async () => {
    const kubeconfigFile = join(work.path, 'kubeconfig');
    await writeFile(kubeconfigFile, kubeconfig(fake.url));
    const passwordFile = await writeMasterPassword(work.path, suite.cluster);
    const configMap = new AtomicSecretWriter(join(work.path, 'config'));
    await configMap.write({ 'config.yaml': configYaml({ atlas: { cluster: suite.cluster, passwordFile } }) });

    const child = startCli(
      [
        'controller',
        '--config',
        join(work.path, 'config', 'config.yaml'),
        '--port',
        '0',
        '--host',
        '127.0.0.1',
        '--leader-elect',
        '--lease-namespace',
        'ops',
        '--identity',
        'pod-1',
      ],
      { env: { KUBECONFIG: kubeconfigFile } },
    );
    const logs = createInterface({ input: child.stderr });
    const lines: Array<Record<string, unknown>> = [];
    const logged = (accept: (line: Record<string, unknown>) => boolean) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const found = lines.find(accept);
        if (found) return resolve(found);
        logs.on('line', (text) => {
          try {
            const line = JSON.parse(text) as Record<string, unknown>;
            if (accept(line)) resolve(line);
          } catch {}
        });
      });
    logs.on('line', (text) => {
      try {
        lines.push(JSON.parse(text));
      } catch {}
    });
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      const serving = await logged((line) => typeof line.url === 'string');
      const base = String(serving.url).replace(/\/metrics$/, '');
      await logged((line) => line.msg === 'leading');
      expect(fake.get('leases', 'ops', 'hotload-claim-reconciler')?.spec).toMatchObject({
        holderIdentity: 'pod-1',
      });

      await createReadyClaim(fake, 'apps', 'web');
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(/^users_created_total 2$/m);

      // A claim for a label the config does not know yet waits; the ConfigMap update fixes it.
      const waiting = claimReady(fake, 'batch', 'False');
      fake.create(
        CLAIM_PLURAL,
        'apps',
        claimObject('batch', { instanceLabel: 'reports', userName: 'batch', databaseName: 'batch' }, 'apps'),
      );
      await waiting;
      const ready = claimReady(fake, 'batch');
      await configMap.write({
        'config.yaml': configYaml({
          atlas: { cluster: suite.cluster, passwordFile },
          reports: { cluster: suite.cluster, passwordFile },
        }),
      });
      await ready;
      expect(fake.get('secrets', 'apps', 'batch')).toBeDefined();

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(fake.get('leases', 'ops', 'hotload-claim-reconciler')?.spec).not.toHaveProperty(
        'holderIdentity',
      );
      expect(lines.map((line) => JSON.stringify(line)).join('\n')).not.toMatch(/password=|"password"/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
