/**
 * The API clients the controller uses, made from one KubeConfig, and the two API error
 * codes it acts on. Everything Kubernetes-specific that is not a concept of its own.
 */
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
} from '@kubernetes/client-node';
import { reuseConnections } from './client-node-internals.js';

/** The typed API groups of one cluster connection. */
export interface KubeClients {
  /** The KubeConfig the clients were made from. */
  readonly config: KubeConfig;
  /** The core API (Secrets, Events). */
  readonly core: CoreV1Api;
  /** The custom objects API (DatabaseClaims and their status). */
  readonly custom: CustomObjectsApi;
  /** The coordination API (the leader election Lease). */
  readonly coordination: CoordinationV1Api;
}

/** Clients for `config` (which is made to reuse keep-alive connections: `client-node-internals.ts`). */
export function kubeClients(config: KubeConfig): KubeClients {
  reuseConnections(config);
  return {
    config,
    core: config.makeApiClient(CoreV1Api),
    custom: config.makeApiClient(CustomObjectsApi),
    coordination: config.makeApiClient(CoordinationV1Api),
  };
}

/**
 * Clients for an API server reached at a plain URL with no credentials of its own, such as
 * `kubectl proxy` (`http://127.0.0.1:8001`).
 */
export function kubeClientsForUrl(server: string): KubeClients {
  const config = new KubeConfig();
  config.loadFromOptions({
    // client-node refuses http:// unless TLS checks are off (there is no TLS to check then).
    clusters: [{ name: 'direct', server, skipTLSVerify: server.startsWith('http://') }],
    users: [{ name: 'none' }],
    contexts: [{ name: 'direct', cluster: 'direct', user: 'none' }],
    currentContext: 'direct',
  });
  return kubeClients(config);
}

/** HTTP status of an API error, or undefined for anything else (network, bug). */
export function apiStatus(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** 404: the object is gone. */
export function isNotFound(error: unknown): boolean {
  return apiStatus(error) === 404;
}

/** 409: stale resourceVersion (or already exists): re-read and try again. */
export function isConflict(error: unknown): boolean {
  return apiStatus(error) === 409;
}

/**
 * A short description of an API error for conditions and logs: the status code and the
 * API's message, never a request body (a Secret's data would be in it).
 */
export function describeApiError(error: unknown): string {
  if (error instanceof ApiException) {
    const message = statusMessage(error.body);
    return `Kubernetes API ${error.code}${message ? `: ${message}` : ''}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** Retries `attempt` while it fails with 409 Conflict (re-read inside it), up to `times`. */
export async function retryOnConflict<T>(attempt: () => Promise<T>, times = 5): Promise<T> {
  for (let tried = 1; ; tried++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isConflict(error) || tried >= times) throw error;
    }
  }
}

/** `message` of a Status body (parsed or still text), or ''. */
function statusMessage(body: unknown): string {
  let value = body;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return '';
    }
  }
  const message = (value as { message?: unknown } | null | undefined)?.message;
  return typeof message === 'string' ? message : '';
}
