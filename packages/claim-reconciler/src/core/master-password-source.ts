/**
 * The master login of one instance as a hotload connection source: host, port, user and
 * sslmode from the fragment key, the password from its file or mounted Secret, read again
 * on every change. Master connections run on a hotload-pg `Pool` over it, so a rotated
 * master password (the instance's admin password, rotated by its operator) is verified,
 * switched to and the connections opened with the old one drained, as for any service.
 */
import { dirname } from 'node:path';
import { ConnectionConfig, type ConnectionSource } from 'hotload-core';
import type { InstanceTarget } from './instance-target.js';
import { readMasterPassword } from './reconciler-config.js';

/** See the module comment. */
export class MasterPasswordSource implements ConnectionSource {
  /** A source of ours, not one of hotload-core's file layouts. */
  readonly kind = 'static' as const;
  /** Which master login and where its password comes from (never the password). */
  readonly description: string;
  /** The password file's folder: a kubelet Secret volume swaps `..data` there. */
  readonly watchPaths: readonly string[];

  constructor(private readonly target: InstanceTarget) {
    const { label, password } = target.fragment;
    if (password.kind === 'dsn') {
      this.description = `master login of ${password.description}`;
      this.watchPaths = password.watchPaths;
    } else {
      this.description = `master login of fragment key ${label} (password from ${password.path})`;
      this.watchPaths = [dirname(password.path)];
    }
  }

  /** The master login with the password as it is now. */
  async read(): Promise<ConnectionConfig> {
    const { host, port, fragment } = this.target;
    return ConnectionConfig.create({
      host,
      port,
      user: fragment.username,
      password: await readMasterPassword(fragment),
      database: this.target.homeDatabase ?? 'postgres',
      sslmode: fragment.sslmode,
      ...(fragment.sslrootcert === undefined ? {} : { params: { sslrootcert: fragment.sslrootcert } }),
    });
  }
}
