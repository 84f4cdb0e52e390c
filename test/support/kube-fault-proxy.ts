/**
 * An HTTPS proxy of ours between a client (the controller) and the REAL kube-apiserver, for
 * the faults a healthy server does not produce on command: a `5xx` answer to chosen
 * requests (the request never reaches the server), and watch streams ended under the
 * client's feet. Everything else is passed through unchanged, the client's own credentials
 * included, so RBAC still applies. It serves the apiserver's own certificate (valid for
 * 127.0.0.1), so the client trusts it with the same CA.
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { KubeControlPlane } from './kube-control-plane.js';

/** A request as the proxy sees it: method and path with query. */
export interface ProxiedRequest {
  readonly method: string;
  readonly path: string;
}

interface Fault {
  readonly match: (request: ProxiedRequest) => boolean;
  readonly status: number;
  remaining: number;
}

/**
 * Emits `request` ({@link ProxiedRequest}) for every request it receives, and `fault`
 * (the request and the status) each time it answers in the server's stead.
 */
export class KubeFaultProxy extends EventEmitter {
  readonly #server: Server;
  readonly #target: URL;
  readonly #ca: string;
  readonly #faults: Fault[] = [];
  readonly #watches = new Set<ServerResponse>();
  #connections = 0;

  private constructor(plane: KubeControlPlane) {
    super();
    this.#target = new URL(plane.url);
    this.#ca = plane.caPem;
    this.#server = createServer(
      {
        cert: readFileSync(join(plane.dir, 'pki', 'apiserver.crt')),
        key: readFileSync(join(plane.dir, 'pki', 'apiserver.key')),
      },
      (req, res) => this.#handle(req, res),
    );
    this.#server.on('secureConnection', () => {
      this.#connections++;
    });
  }

  /** TLS connections clients opened to the proxy so far (each one a full handshake). */
  get connections(): number {
    return this.#connections;
  }

  /** A proxy in front of `plane`'s apiserver on a free loopback port. */
  static async start(plane: KubeControlPlane): Promise<KubeFaultProxy> {
    const proxy = new KubeFaultProxy(plane);
    await new Promise<void>((resolve) => proxy.#server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** `https://127.0.0.1:<port>`: give it to the client instead of the apiserver's URL. */
  get url(): string {
    return `https://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Answers the next `times` requests that `match` with `status` (a Status body), unforwarded. */
  failNext(match: (request: ProxiedRequest) => boolean, status: number, times = 1): void {
    this.#faults.push({ match, status, remaining: times });
  }

  /** Ends every open watch stream cleanly, as the server does at its request timeout. */
  endWatches(): number {
    const open = [...this.#watches];
    for (const response of open) response.end();
    return open.length;
  }

  /** Removes every pending fault. */
  clearFaults(): void {
    this.#faults.length = 0;
  }

  async close(): Promise<void> {
    this.endWatches();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const seen: ProxiedRequest = { method: req.method ?? 'GET', path: req.url ?? '/' };
    this.emit('request', seen);
    const fault = this.#faults.find((f) => f.remaining > 0 && f.match(seen));
    if (fault) {
      fault.remaining--;
      req.resume();
      res.writeHead(fault.status, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code: fault.status,
          reason: fault.status === 503 ? 'ServiceUnavailable' : 'InternalError',
          message: `injected by the test's fault proxy: ${fault.status}`,
        }),
      );
      this.emit('fault', seen, fault.status);
      return;
    }
    const upstream = request(
      {
        host: this.#target.hostname,
        port: this.#target.port,
        method: seen.method,
        path: seen.path,
        headers: { ...req.headers, host: this.#target.host },
        ca: this.#ca,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        // A watch's headers come before any event: the client waits for them to start.
        res.flushHeaders();
        const watching = new URL(seen.path, 'https://x').searchParams.get('watch') === 'true';
        if (watching) {
          this.#watches.add(res);
          res.on('close', () => {
            this.#watches.delete(res);
            answer.destroy();
          });
        }
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  }
}
