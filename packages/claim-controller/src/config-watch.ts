/**
 * Re-reads the reconciler config when its mounted ConfigMap changes, with hotload-core's
 * SourceWatcher (it already handles the kubelet's `..data` swap, rename-over writes and a
 * folder that disappears and comes back). The watcher works on connection sources, so the
 * config file is presented as one: a validated read yields a placeholder connection config
 * whose only varying field is a digest of the file, so the watcher's fingerprint changes
 * exactly when the config does. An invalid config is reported and never replaces the
 * working one. Master passwords need no watch: they are read at connection time.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ConfigError, parseReconcilerConfig, type ReconcilerConfig } from 'hotload-claim-reconciler';
import { ConnectionConfig, type ConnectionSource, SourceError, SourceWatcher } from 'hotload-core';

/** A running config watch; `close()` when done. */
export interface ConfigWatch {
  /** The config in force (the last valid one). */
  readonly current: ReconcilerConfig;
  /** Stops watching the config file. */
  close(): Promise<void>;
}

/**
 * Loads `file` and watches it. `onChange` gets each new valid config; `onError` gets the
 * message of an invalid one (field names, never values).
 */
export async function watchReconcilerConfig(
  file: string,
  onChange: (config: ReconcilerConfig) => void,
  onError: (message: string) => void,
): Promise<ConfigWatch> {
  let current: ReconcilerConfig | undefined;
  const source: ConnectionSource = {
    kind: 'dsn-file',
    description: `reconciler config ${file}`,
    watchPaths: [dirname(file)],
    read: async () => {
      let text: string;
      try {
        text = await readFile(file, 'utf8');
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'unreadable';
        throw new SourceError({ code, source: 'reconciler-config', file, problem: 'cannot read the config' });
      }
      let parsed: ReconcilerConfig;
      try {
        parsed = parseReconcilerConfig(text, file);
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        throw new SourceError({
          code: 'invalid-value',
          source: 'reconciler-config',
          file,
          problem: error.message,
        });
      }
      pending = parsed;
      const digest = createHash('sha256').update(text).digest('hex').slice(0, 32);
      return ConnectionConfig.create({
        host: 'reconciler-config',
        database: `config_${digest}`,
        user: 'config',
      });
    },
  };
  let pending: ReconcilerConfig | undefined;
  const watcher = new SourceWatcher(source);
  await watcher.start();
  current = pending!;
  watcher.on('change', () => {
    if (!pending) return;
    current = pending;
    onChange(pending);
  });
  watcher.on('error', (error) => onError(error.message));
  return {
    get current() {
      return current!;
    },
    close: () => watcher.close(),
  };
}
