/**
 * The published secret of a claim: `<outputDir>/<namespace>/<secretName>/`, written with
 * hotload-core's kubelet-style atomic writer (new folder + `..data` symlink swap), so a
 * watcher never sees half an update and a crash mid-write leaves the previous secret whole.
 */
import { lstat, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AtomicSecretWriter, DATA_DIR_NAME } from 'hotload-core';
import type { ClaimPorts, SecretSink } from '../core/claim-ports.js';
import {
  credentialsFromSecret,
  type PublishedCredentials,
  secretDiffers,
  secretFiles,
} from '../core/secret-layout.js';
import { lockLeftovers, removeLockLeftovers, withFolderLock } from './folder-lock.js';
import { FolderStatusStore } from './folder-status-store.js';
import { folderPublisherId } from './publisher-id.js';

/** Suffix of a lock file beside a secret folder (when none is given). */
const LOCK_SUFFIX = '.lock';

/**
 * The lock file of a claim's secret: in the output folder itself (which the pass creates
 * before writing), so taking the lock never creates the namespace folder. Namespaces have
 * no dots, so `<namespace>.<secretName>` names one secret.
 */
export function secretLockFile(outputDir: string, namespace: string, secretName: string): string {
  return join(outputDir, `.lock.${namespace}.${secretName}`);
}

/** Mode of every published file: readable by the owner only. */
export const SECRET_FILE_MODE = 0o600;

/** Folder of a claim's secret. */
export function secretDirectory(outputDir: string, namespace: string, secretName: string): string {
  return join(outputDir, namespace, secretName);
}

/** Reads, writes and removes one claim's secret folder: the folder mode's {@link SecretSink}. */
export class SecretPublisher implements SecretSink {
  readonly #writer: AtomicSecretWriter;

  /**
   * @param directory - the secret folder
   * @param lockFile - the lock file that makes one writer at a time (see `folder-lock.ts`)
   */
  constructor(
    /** The secret folder. */
    readonly directory: string,
    private readonly lockFile = `${directory}${LOCK_SUFFIX}`,
  ) {
    this.#writer = new AtomicSecretWriter(directory, { fileMode: SECRET_FILE_MODE });
  }

  /** The secret folder (the same as {@link SecretPublisher.directory}). */
  get location(): string {
    return this.directory;
  }

  /** What the secret holds now, or undefined when there is none or it is incomplete. */
  async read(): Promise<PublishedCredentials | undefined> {
    let files: Record<string, Buffer>;
    try {
      files = await this.#writer.read();
    } catch {
      return undefined;
    }
    return credentialsFromSecret((key) => files[key]?.toString('utf8'));
  }

  /** When the current content was published (the `..data` swap), or undefined. */
  async publishedAt(): Promise<Date | undefined> {
    try {
      return (await lstat(join(this.directory, DATA_DIR_NAME))).mtime;
    } catch {
      return undefined;
    }
  }

  /**
   * Publishes atomically; resolves false when the content was already exactly this. The
   * writer's inner steps are announced to `onStep` as `publish-secret:<step>`.
   */
  async publish(
    credentials: PublishedCredentials,
    dsnName: string,
    onStep?: (action: string) => Promise<void>,
  ): Promise<boolean> {
    const result = await this.#writer.write(secretFiles(credentials, dsnName), {
      onStep: (step) => onStep?.(`publish-secret:${step}`),
    });
    return result.changed;
  }

  /** Whether publishing would change anything (same files, same content). */
  async differs(credentials: PublishedCredentials, dsnName: string): Promise<boolean> {
    const wanted = secretFiles(credentials, dsnName);
    let current: Record<string, Buffer>;
    try {
      current = await this.#writer.read();
    } catch {
      return true;
    }
    return secretDiffers((key) => current[key]?.toString('utf8'), Object.keys(current).length, wanted);
  }

  /**
   * What a publish killed midway left: folders `..data` does not point to, and the lock's
   * leftovers whose writer is gone (see `lockLeftovers`).
   */
  async stale(): Promise<string[]> {
    return [...(await this.#writer.staleEntries()), ...(await lockLeftovers(this.lockFile))];
  }

  /** Removes what {@link SecretPublisher.stale} lists (it may hold a previous password that still works). */
  async sweep(): Promise<void> {
    await this.#writer.sweep();
    await removeLockLeftovers(this.lockFile);
  }

  /** Runs `work` holding the secret's lock file (see `folder-lock.ts`). */
  lock<T>(work: () => Promise<T>): Promise<T> {
    return withFolderLock(this.lockFile, work);
  }

  /** Removes the secret folder. */
  async remove(): Promise<void> {
    await rm(this.directory, { recursive: true, force: true });
  }
}

/** The folder mode's ports: secret folders and status files under `outputDir`. */
export function folderPorts(outputDir: string): ClaimPorts {
  return {
    secretFor: (namespace, secretName) =>
      new SecretPublisher(secretDirectory(outputDir, namespace, secretName)),
    statuses: new FolderStatusStore(outputDir),
    publisherId: (step) => folderPublisherId(outputDir, step),
  };
}
