/**
 * Entry point of the example service, as the container runs it (`node dist/main.js`):
 *
 *   DB_SECRET_DIR=/var/run/secrets/db PORT=8080 node dist/main.js [--host <address>] [--port <n>]
 *
 * Listens on every interface unless `--host` (or `HOST`) names one address: in a pod the
 * kubelet's probes and the Service reach it on the pod IP, never on loopback.
 */
import { parseArgs } from 'node:util';
import { startNotesService } from './notes-service.js';

const USAGE = 'usage: node dist/main.js [--host <address>] [--port <n>]   (env: HOST, PORT, DB_SECRET_DIR)';

function listenOptions(): { host: string | undefined; port: number } {
  try {
    const { values } = parseArgs({ options: { host: { type: 'string' }, port: { type: 'string' } } });
    const port = Number(values.port ?? process.env.PORT ?? 8080);
    if (!Number.isInteger(port) || port < 0 || port > 65_535)
      throw new Error(`invalid port: ${values.port ?? process.env.PORT}`);
    return { host: values.host ?? (process.env.HOST || undefined), port };
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    process.exit(2);
  }
}

const { host, port } = listenOptions();
const secretDirectory = process.env.DB_SECRET_DIR ?? '/var/run/secrets/db';
const service = await startNotesService({ secretDirectory, port, host, allInterfaces: host === undefined });
console.log(
  `notes service listening on ${host ?? 'every interface'}, port ${new URL(service.url).port}, database secret from ${secretDirectory}`,
);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    // Kubernetes sends SIGTERM on rollout: finish in-flight requests, then close every pool generation.
    service.close().then(() => process.exit(0));
  });
}
