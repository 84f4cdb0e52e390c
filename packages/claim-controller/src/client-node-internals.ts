/**
 * Every reliance on `@kubernetes/client-node`'s internals, in one place. Checked with
 * 1.4.0.
 *
 * - `KubeConfig.createAgent(cluster, agentOptions)` (private): called for every API request
 *   and every watch, it makes a new `https.Agent`, so each request opens a new TLS
 *   connection (a full handshake on both sides: the largest CPU cost of the controller in
 *   the `controller-1000` bench). {@link reuseConnections} keeps one keep-alive agent per
 *   distinct TLS options instead. If the member disappears or changes shape, the override
 *   is not installed and requests go on as before, one connection each.
 */
import { createHash } from 'node:crypto';
import { Agent } from 'node:https';
import type { Cluster, KubeConfig } from '@kubernetes/client-node';

/** The agent options client-node passes (the ones that select a TLS identity). */
interface AgentOptions {
  ca?: unknown;
  cert?: unknown;
  key?: unknown;
  pfx?: unknown;
  passphrase?: unknown;
  rejectUnauthorized?: boolean;
  servername?: string;
}

type CreateAgent = (cluster: Cluster | null, options: AgentOptions) => unknown;

/** Configs already reusing connections (a second `kubeClients(config)` changes nothing). */
const reusing = new WeakSet<KubeConfig>();

/** At most this many distinct agents are kept (a rotated client certificate makes a new one). */
const MAX_AGENTS = 8;

/**
 * Makes `config` reuse keep-alive connections: one `https.Agent` per server and TLS
 * identity (CA, client certificate and key, verification), not one per request. Requests
 * through a proxy and plain-HTTP servers keep client-node's own agents.
 */
export function reuseConnections(config: KubeConfig): KubeConfig {
  const internals = config as unknown as { createAgent?: CreateAgent };
  const original = internals.createAgent;
  if (typeof original !== 'function' || reusing.has(config)) return config;
  reusing.add(config);
  const agents = new Map<string, Agent>();
  internals.createAgent = function reusingAgent(this: KubeConfig, cluster, options) {
    if (!cluster?.server.startsWith('https:') || cluster.proxyUrl)
      return original.call(this, cluster, options);
    const key = identity(cluster.server, options);
    let agent = agents.get(key);
    if (!agent) {
      if (agents.size >= MAX_AGENTS) {
        const [oldest, stale] = agents.entries().next().value!;
        agents.delete(oldest);
        stale.destroy();
      }
      agent = new Agent({ ...(options as object), keepAlive: true });
      agents.set(key, agent);
    }
    return agent;
  };
  return config;
}

function identity(server: string, options: AgentOptions): string {
  const hash = createHash('sha256').update(server);
  for (const field of [
    'ca',
    'cert',
    'key',
    'pfx',
    'passphrase',
    'rejectUnauthorized',
    'servername',
  ] as const) {
    const value = options[field];
    hash.update(`\0${field}=`);
    if (value !== undefined) hash.update(Buffer.isBuffer(value) ? value : String(value));
  }
  return hash.digest('hex');
}
