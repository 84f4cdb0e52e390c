import type { ConnectionConfig } from '../config.js';

/** What `target_session_attrs` asks of the chosen host: `read-write` and `primary` need a writable one. */
export function requiresWritable(config: ConnectionConfig): boolean {
  const attrs = config.params.target_session_attrs;
  return attrs === 'read-write' || attrs === 'primary';
}

/** True when host selection applies: a host list of two or more entries. */
export function isMultiHost(config: ConnectionConfig): boolean {
  return config.hosts.length > 1;
}

/** A candidate's host is read-only while `target_session_attrs` asks for a writable one. */
export class ReadOnlyHostError extends Error {
  /** Always `ReadOnlyHostError`. */
  override readonly name = 'ReadOnlyHostError';
  constructor(host: string, port: number) {
    super(`${host}:${port} is read-only (target_session_attrs=read-write)`);
  }
}
