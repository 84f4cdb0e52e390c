import {
  type ConnectionConfig,
  type ConnectionSource,
  createSource,
  type SourceSnapshot,
  type SourceSpec,
} from 'hotload-core';

/**
 * A real source (a secret directory, ...) that runs a test's hook before its next read:
 * the test sees the moment a driver re-reads the source (as it does after a login refused
 * for its credentials) and can change the secret right then.
 */
export class RereadHookSource implements ConnectionSource {
  readonly #inner: ConnectionSource;
  #beforeNextRead: (() => Promise<void>) | undefined;

  constructor(spec: SourceSpec) {
    this.#inner = createSource(spec);
  }

  get kind() {
    return this.#inner.kind;
  }

  get description(): string {
    return this.#inner.description;
  }

  get watchPaths(): readonly string[] {
    return this.#inner.watchPaths;
  }

  /** Runs `hook` (once) before the next read. */
  beforeNextRead(hook: () => Promise<void>): void {
    this.#beforeNextRead = hook;
  }

  async read(): Promise<ConnectionConfig> {
    await this.#runHook();
    return this.#inner.read();
  }

  async readSnapshot(): Promise<SourceSnapshot> {
    await this.#runHook();
    return this.#inner.readSnapshot
      ? this.#inner.readSnapshot()
      : { config: await this.#inner.read(), changedAt: Date.now() };
  }

  async #runHook(): Promise<void> {
    const hook = this.#beforeNextRead;
    this.#beforeNextRead = undefined;
    await hook?.();
  }
}
