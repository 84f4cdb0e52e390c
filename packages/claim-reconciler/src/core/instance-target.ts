/** An instance a claim lives on, and how the reconciler logs in to it as master. */
import type { FragmentKey } from './reconciler-config.js';

/** A PostgreSQL instance as a claim targets it: its fragment key and effective host/port. */
export interface InstanceTarget {
  /** Fragment key label matched by the claim's `instanceLabel`. */
  readonly label: string;
  /** The effective host (the claim's override, else the fragment key's). */
  readonly host: string;
  /** The effective port (the claim's override, else the fragment key's). */
  readonly port: number;
  /** The fragment key: how to log in as master (user, sslmode, password source). */
  readonly fragment: FragmentKey;
  /**
   * The database the master login's own sessions use (role statements, advisory locks):
   * `postgres` when absent; an existing database's DSN login may reach only its database.
   */
  readonly homeDatabase?: string;
}

/** `host:port`, the identity of an instance (the label only says how to log in). */
export function instanceId(target: Pick<InstanceTarget, 'host' | 'port'>): string {
  return target.host.includes(':') ? `[${target.host}]:${target.port}` : `${target.host}:${target.port}`;
}
