/**
 * A FAKE kubelet for one Secret volume: it follows a Secret in the fake API server and
 * projects its data into a folder with hotload-core's AtomicSecretWriter, the way the real
 * kubelet updates a mounted Secret (new timestamped folder, `..data` symlink swap). Like
 * the kubelet, it keeps the last projected files when the Secret is deleted.
 */
import { AtomicSecretWriter } from 'hotload-core';
import type { FakeChange, FakeKubeApiServer, KubeObject } from './fake-kube-apiserver.js';

export class FakeKubelet {
  readonly #writer: AtomicSecretWriter;
  readonly #listener: (change: FakeChange) => void;
  #writes: Promise<unknown> = Promise.resolve();
  /** Number of projections that changed the folder. */
  projections = 0;

  private constructor(
    private readonly api: FakeKubeApiServer,
    readonly namespace: string,
    readonly secretName: string,
    readonly directory: string,
  ) {
    this.#writer = new AtomicSecretWriter(directory);
    this.#listener = (change) => {
      const { metadata } = change.object;
      if (change.plural !== 'secrets' || metadata.namespace !== namespace || metadata.name !== secretName)
        return;
      if (change.type !== 'DELETED') this.#project(change.object);
    };
  }

  /** Projects the Secret now (if it exists) and on every change. */
  static mount(
    api: FakeKubeApiServer,
    namespace: string,
    secretName: string,
    directory: string,
  ): FakeKubelet {
    const kubelet = new FakeKubelet(api, namespace, secretName, directory);
    api.on('change', kubelet.#listener);
    const current = api.get('secrets', namespace, secretName);
    if (current) kubelet.#project(current);
    return kubelet;
  }

  /** Resolves when every projection so far is written. */
  settled(): Promise<unknown> {
    return this.#writes;
  }

  /** Stops following the Secret. */
  unmount(): Promise<unknown> {
    this.api.removeListener('change', this.#listener);
    return this.#writes;
  }

  #project(secret: KubeObject): void {
    const data = (secret.data ?? {}) as Record<string, string>;
    const files = Object.fromEntries(
      Object.entries(data).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    );
    this.#writes = this.#writes.then(async () => {
      const result = await this.#writer.write(files);
      if (result.changed) this.projections++;
    });
  }
}
