/**
 * A FAKE kubelet for one Secret or ConfigMap volume (no real kubelet runs here): it follows
 * the object in an API server (the real one through `KubeObjects`) and projects its data into
 * a folder with hotload-core's AtomicSecretWriter, the way the real kubelet updates a
 * mounted volume (new timestamped folder, `..data` symlink swap). Like the kubelet, it
 * keeps the last projected files when the object is deleted.
 */
import type { EventEmitter } from 'node:events';
import { AtomicSecretWriter } from 'hotload-core';
import type { KubeChange, KubeObject } from './kube-objects.js';

/** What the kubelet follows: `change` events and a read of one object. */
export interface SecretFeed extends Pick<EventEmitter, 'on' | 'removeListener'> {
  get(
    plural: string,
    namespace: string,
    name: string,
  ): KubeObject | undefined | Promise<KubeObject | undefined>;
}

/** What a volume projects: a Secret (base64 `data`) or a ConfigMap (plain `data`). */
export type VolumeSource = 'secrets' | 'configmaps';

export class FakeKubelet {
  readonly #writer: AtomicSecretWriter;
  readonly #listener: (change: KubeChange) => void;
  #writes: Promise<unknown> = Promise.resolve();
  #followed = false;
  /** Number of projections that changed the folder. */
  projections = 0;

  private constructor(
    private readonly api: SecretFeed,
    readonly namespace: string,
    readonly secretName: string,
    readonly directory: string,
    readonly source: VolumeSource,
  ) {
    this.#writer = new AtomicSecretWriter(directory);
    this.#listener = (change) => {
      const { metadata } = change.object;
      if (change.plural !== source || metadata.namespace !== namespace || metadata.name !== secretName)
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
    source: VolumeSource = 'secrets',
  ): Promise<FakeKubelet> {
    const kubelet = new FakeKubelet(api, namespace, secretName, directory, source);
    api.on('change', kubelet.#listener);
    const current = await api.get(source, namespace, secretName);
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
      Object.entries(data).map(([key, value]) => [
        key,
        this.source === 'secrets' ? Buffer.from(value, 'base64') : Buffer.from(value, 'utf8'),
      ]),
    );
    this.#writes = this.#writes.then(async () => {
      const result = await this.#writer.write(files);
      if (result.changed) this.projections++;
    });
  }
}
