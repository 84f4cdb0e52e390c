/**
 * The `/metrics` endpoint of the CLI's `--watch` mode: plain `node:http`, the Prometheus
 * text format of one registry. The controller mode adds `/healthz` and `/readyz` on the
 * same port (Kubernetes probes): 200 `ok` or 503 with the reason.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PromRegistry as Registry } from 'hotload-core';

/** A running metrics endpoint. */
export interface MetricsServer {
  /** `http://host:port/metrics`, with the port actually bound (useful with port 0). */
  readonly url: string;
  /** Stops listening and closes open connections. */
  close(): Promise<void>;
}

/** A probe: undefined when healthy, else why not (no secret in it). */
export type HealthCheck = () => string | undefined;

/** Probes served beside `/metrics`. */
export interface HealthChecks {
  /** `/healthz`: the process works (a failing liveness probe restarts the pod). */
  readonly live: HealthCheck;
  /** `/readyz`: the replica does its job (leads, or stands by ready to take over). */
  readonly ready: HealthCheck;
}

/** Serves `registry` on `GET /metrics`, and `health` on `/healthz`, `/readyz` (else 404). */
export async function startMetricsServer(
  registry: Registry,
  port: number,
  host: string,
  health?: HealthChecks,
): Promise<MetricsServer> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    const probe = path === '/healthz' ? health?.live : path === '/readyz' ? health?.ready : undefined;
    if (request.method === 'GET' && probe) {
      const problem = probe();
      response
        .writeHead(problem === undefined ? 200 : 503, { 'content-type': 'text/plain' })
        .end(`${problem ?? 'ok'}\n`);
      return;
    }
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
