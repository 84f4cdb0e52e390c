/**
 * A FAKE kubelet for one Secret volume (no real kubelet runs here): it follows a Secret in
 * an API server (the real one through {@link KubeObjects}, or the fake) and
 * projects its data into a folder with hotload-core's AtomicSecretWriter, the way the real
 * kubelet updates a mounted Secret (new timestamped folder, `..data` symlink swap). Like
 * the kubelet, it keeps the last projected files when the Secret is deleted.
 */
import { AtomicSecretWriter } from 'hotload-core';
import type { EventEmitter } from 'node:events';
import type { FakeChange, KubeObject } from './fake-kube-apiserver.js';

/** What the kubelet follows: `change` events and a read of one Secret. */
export interface SecretFeed extends Pick<EventEmitter, 'on' | 'removeListener'> {
  get(
    plural: 'secrets',
    namespace: string,
    name: string,
  ): KubeObject | undefined | Promise<KubeObject | undefined>;
}

export class FakeKubelet {
  readonly #writer: AtomicSecretWriter;
  readonly #listener: (change: FakeChange) => void;
  #writes: Promise<unknown> = Promise.resolve();
  #followed = false;
  /** Number of projections that changed the folder. */
  projections = 0;

  private constructor(
    private readonly api: SecretFeed,
    readonly namespace: string,
    readonly secretName: string,
    readonly directory: string,
  ) {
    this.#writer = new AtomicSecretWriter(directory);
    this.#listener = (change) => {
      const { metadata } = change.object;
      if (change.plural !== 'secrets' || metadata.namespace !== namespace || metadata.name !== secretName)
        return;
      this.#followed = true;
      if (change.type !== 'DELETED') this.#project(change.object);
    };
  }

  /** Projects the Secret now (if it exists) and on every change. */
  static async mount(
    api: SecretFeed,
    namespace: string,
    secretName: string,
    directory: string,
  ): Promise<FakeKubelet> {
    const kubelet = new FakeKubelet(api, namespace, secretName, directory);
    api.on('change', kubelet.#listener);
    const current = await api.get('secrets', namespace, secretName);
    // A change seen while reading has projected a newer version already.
    if (current && !kubelet.#followed) kubelet.#project(current);
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
