/**
 * `hotload-claim-controller --config <file> [...]`: the Kubernetes controller
 * mode of the CLI. Config from the mounted ConfigMap (re-read on change), master passwords
 * from mounted Secrets (read at connection time), the cluster from the in-cluster service
 * account (or KUBECONFIG); `/metrics`, `/healthz` and `/readyz` on one port; with
 * `--leader-elect`, only the Lease holder reconciles. Logs are JSON lines on stderr and
 * never hold a password.
 */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { ClaimReconciler, prometheusMetrics, startMetricsServer } from 'hotload-claim-reconciler';
import type { HotloadLogger } from 'hotload-core';
import { ClaimController, type KeyReconciled } from './claim-controller.js';
import { DEFAULT_PUBLISHER_ID } from './claim-resource.js';
import { watchReconcilerConfig } from './config-watch.js';
import { leaderElectionMetrics, registerControllerMetrics } from './controller-metrics.js';
import { kubeClients } from './kube-clients.js';
import { LeaderElector } from './leader-election.js';
import { runWhileLeading } from './leader-gate.js';

/** Usage text of the `controller` command. */
export const CONTROLLER_USAGE = `usage: hotload-claim-controller --config <file> [--namespaces <a,b>]
         [--workers <n>] [--resync-seconds <n>] [--port <port>] [--host <host>]
         [--leader-elect] [--lease-namespace <ns>] [--lease-name <name>] [--identity <name>]
         [--records-namespace <ns>] [--no-secret-cache] [--take-over]

  --config           reconciler config (the ConfigMap's config.yaml); re-read when it changes
  --namespaces       comma-separated namespaces to watch; default: all
  --workers          claims reconciled at the same time (never two of one claim); default 4
  --resync-seconds   every claim is reconciled again this often; default 600
  --port             port of /metrics, /healthz and /readyz; default 8080
  --host             address they listen on; default 0.0.0.0
  --leader-elect     run several replicas: only the holder of a coordination.k8s.io Lease reconciles
  --lease-namespace  namespace of the Lease; default $POD_NAMESPACE or "default"
  --lease-name       name of the Lease; default hotload-claim-reconciler
  --identity         this replica's name in the Lease; default $POD_NAME or the host name
  --records-namespace  namespace of the ConfigMaps hotload-claim-records-<hash>, the second
                     record of what each claim owns, one per claim (a claim gone without its
                     finalizer is still cleaned up by it); default the --lease-namespace
  --no-secret-cache  read each claim's Secret with a GET per reconcile instead of from a
                     label-selected informer cache (then RBAC needs no list/watch on Secrets)
  --take-over        publish claims another publisher (a folder-mode --out) recorded, from now on`;

const OPTIONS = {
  config: { type: 'string' },
  namespaces: { type: 'string', default: '' },
  workers: { type: 'string', default: '4' },
  'resync-seconds': { type: 'string', default: '600' },
  port: { type: 'string', default: '8080' },
  host: { type: 'string', default: '0.0.0.0' },
  'leader-elect': { type: 'boolean', default: false },
  'lease-namespace': { type: 'string', default: process.env.POD_NAMESPACE ?? 'default' },
  'lease-name': { type: 'string', default: 'hotload-claim-reconciler' },
  identity: { type: 'string', default: process.env.POD_NAME ?? hostname() },
  'records-namespace': { type: 'string' },
  'no-secret-cache': { type: 'boolean', default: false },
  'take-over': { type: 'boolean', default: false },
} as const;

/** Bad `controller` arguments. */
export class ControllerUsageError extends Error {}

/** Runs the controller until SIGTERM/SIGINT; resolves the exit code. */
export async function runControllerCli(argv: string[]): Promise<number> {
  const options = parseControllerArgs(argv);
  const logger = jsonLogger();
  const client = await import('prom-client').catch(() => {
    throw new ControllerUsageError('the controller serves /metrics: install the prom-client package');
  });
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  const metrics = prometheusMetrics(client, registry);

  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const clients = kubeClients(kubeConfig);
  let reconciler: ClaimReconciler | undefined;
  let controller: ClaimController | undefined;
  const configWatch = await watchReconcilerConfig(
    options.configFile,
    (config) => {
      logger.info({ file: options.configFile }, 'reconciler config changed: reconciling every claim');
      reconciler?.setConfig(config);
      controller?.enqueueAll();
    },
    (message) => logger.warn({ error: message }, 'reconciler config invalid: keeping the previous one'),
  );
  reconciler = new ClaimReconciler({
    config: configWatch.current,
    metrics,
    takeOver: options.takeOver,
    publisherId: DEFAULT_PUBLISHER_ID,
  });
  controller = new ClaimController({
    clients,
    reconciler,
    namespaces: options.namespaces,
    workers: options.workers,
    resyncMillis: options.resyncSeconds * 1000,
    records: { namespace: options.recordsNamespace },
    cacheSecrets: options.secretCache,
    logger,
  });
  registerControllerMetrics(client, registry, controller, metrics, () => configWatch.current);
  controller.on('reconciled', (event: KeyReconciled) =>
    (event.error ? logger.warn : logger.info).call(
      logger,
      { ...event },
      `claim ${event.key}: ${event.outcome}`,
    ),
  );
  const active = controller;
  let elector: LeaderElector | undefined;
  const server = await startMetricsServer(registry, options.port, options.host, {
    live: () => undefined,
    ready: () =>
      (elector && !elector.leading) || active.started
        ? undefined
        : 'the controller has not listed claims yet',
  });
  logger.info({ url: server.url }, 'serving /metrics, /healthz, /readyz');

  let stop: () => Promise<void>;
  if (options.leaderElect) {
    elector = new LeaderElector(clients, {
      namespace: options.leaseNamespace,
      leaseName: options.leaseName,
      identity: options.identity,
    });
    const lease = `${options.leaseNamespace}/${options.leaseName}`;
    const leader = leaderElectionMetrics(client, registry, lease);
    elector.on('started-leading', () => {
      leader.leading(true);
      logger.info({ identity: options.identity, lease }, 'leading');
    });
    elector.on('stopped-leading', () => leader.leading(false));
    const gate = runWhileLeading(
      elector,
      active,
      () => {
        logger.error({ identity: options.identity, lease }, 'lost the Lease: exiting');
        process.exit(1);
      },
      (message) => {
        leader.failed();
        // Said plainly: a replica that cannot write its Lease reconciles nothing, and if no
        // replica can, no claim is ever reconciled.
        logger.warn(
          { identity: options.identity, lease, error: message },
          elector?.leading
            ? `cannot renew the Lease ${lease}: still leading until the renew deadline`
            : `not leading: cannot acquire the Lease ${lease}; this replica reconciles nothing until it holds it`,
        );
      },
    );
    stop = () => gate.stop();
  } else {
    await active.start();
    stop = () => active.stop();
  }
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await stop();
  await reconciler.close();
  await configWatch.close();
  await server.close();
  return 0;
}

interface ControllerOptions {
  readonly configFile: string;
  readonly namespaces: string[];
  readonly workers: number;
  readonly resyncSeconds: number;
  readonly port: number;
  readonly host: string;
  readonly leaderElect: boolean;
  readonly leaseNamespace: string;
  readonly leaseName: string;
  readonly identity: string;
  readonly recordsNamespace: string;
  readonly secretCache: boolean;
  readonly takeOver: boolean;
}

function parseControllerArgs(argv: string[]): ControllerOptions {
  let values: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS }>>['values'];
  try {
    values = parseArgs({ args: argv, options: OPTIONS }).values;
  } catch (error) {
    throw new ControllerUsageError((error as Error).message.split('. ')[0]!);
  }
  if (!values.config) throw new ControllerUsageError('--config is required');
  const number = (flag: keyof typeof OPTIONS, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const value = Number(values[flag]);
    if (!Number.isInteger(value) || value < min || value > max)
      throw new ControllerUsageError(`--${flag} must be a whole number from ${min} to ${max}`);
    return value;
  };
  return {
    configFile: values.config,
    namespaces: values.namespaces
      .split(',')
      .map((namespace) => namespace.trim())
      .filter(Boolean),
    workers: number('workers', 1),
    resyncSeconds: number('resync-seconds', 1),
    port: number('port', 0, 65535),
    host: values.host,
    leaderElect: values['leader-elect'],
    leaseNamespace: values['lease-namespace'],
    leaseName: values['lease-name'],
    identity: values.identity,
    recordsNamespace: values['records-namespace'] ?? values['lease-namespace'],
    secretCache: !values['no-secret-cache'],
    takeOver: values['take-over'],
  };
}

/** A pino-shaped logger writing JSON lines to stderr. */
function jsonLogger(): HotloadLogger {
  const line = (level: string) => (fields: object, msg?: string) =>
    process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), msg, ...fields })}\n`);
  return { debug: () => {}, info: line('info'), warn: line('warn'), error: line('error') };
}
