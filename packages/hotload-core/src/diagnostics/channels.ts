import diagnosticsChannel from 'node:diagnostics_channel';
import type { SourceError } from '../errors.js';

/**
 * Names of the `node:diagnostics_channel` channels hotload publishes its lifecycle on.
 * Subscribe with `diagnostics_channel.subscribe(HOTLOAD_CHANNELS.switch, onSwitch)`: APM
 * and tracing tools can follow switches without any change to the application. Payloads
 * (see the `Hotload*Message` types) never contain a secret.
 */
export const HOTLOAD_CHANNELS = {
  /** A watched source changed for real: {@link HotloadChangeMessage}. */
  change: 'hotload:change',
  /** A watched source became invalid or unreadable: {@link HotloadSourceErrorMessage}. */
  sourceError: 'hotload:source-error',
  /** A new config was verified, or failed to be: {@link HotloadVerifyMessage}. */
  verify: 'hotload:verify',
  /** New work moved to a new generation: {@link HotloadSwitchMessage}. */
  switch: 'hotload:switch',
  /** A retired generation closed its last connection: {@link HotloadDrainedMessage}. */
  drained: 'hotload:drained',
  /** A retired generation's busy connections hit the drain timeout: {@link HotloadForceClosedMessage}. */
  forceClosed: 'hotload:force-closed',
} as const;

/** One of the {@link HOTLOAD_CHANNELS} names. */
export type HotloadChannelName = (typeof HOTLOAD_CHANNELS)[keyof typeof HOTLOAD_CHANNELS];

/** Published on `hotload:change`. */
export interface HotloadChangeMessage {
  /** The source's description (paths only). */
  readonly source: string;
  /** Fingerprint (keyed HMAC, reveals nothing) of the config replaced, if any. */
  readonly previousFingerprint: string | undefined;
  /** Fingerprint of the new config. */
  readonly fingerprint: string;
  /** ms since epoch: newest mtime of the files read. */
  readonly changedAt: number;
  /** ms since epoch: first file-system event of the change. */
  readonly detectedAt: number;
  /** ms since epoch: change emitted. */
  readonly emittedAt: number;
}

/** Published on `hotload:source-error`. */
export interface HotloadSourceErrorMessage {
  /** The source's description (paths only). */
  readonly source: string;
  /** Secret-free by construction (see `SourceError`). */
  readonly error: SourceError;
}

/** Published on `hotload:verify`, once per verify attempt that decided something. */
export interface HotloadVerifyMessage {
  /** The pool's name (`hotload.name`) or its source's description. */
  readonly source: string;
  /** True when the candidate config worked (a switch follows at once). */
  readonly ok: boolean;
  /** The candidate generation. */
  readonly generation: number;
  /** Attempt number, from 1. */
  readonly attempt: number;
  /** On failure: the delay before the next attempt. */
  readonly nextRetryMillis?: number;
  /** On failure: what went wrong, already redacted (name, message, code only). */
  readonly error?: Error;
}

/** Published on `hotload:switch`. */
export interface HotloadSwitchMessage {
  /** The pool's name (`hotload.name`) or its source's description. */
  readonly source: string;
  /** The generation that served until now (undefined for the first one). */
  readonly fromGeneration: number | undefined;
  /** The generation that serves from now on. */
  readonly toGeneration: number;
  /** ms since epoch: when the source files changed, when known. */
  readonly changedAt: number | undefined;
  /** ms since epoch: when new work moved. */
  readonly switchedAt: number;
}

/** Published on `hotload:drained`. */
export interface HotloadDrainedMessage {
  /** The pool's name (`hotload.name`) or its source's description. */
  readonly source: string;
  /** The retired generation that drained. */
  readonly generation: number;
  /** From the switch away from it to its last connection closed, when known. */
  readonly drainMillis: number | undefined;
  /** True when connections had to be force-closed. */
  readonly forced: boolean;
}

/** Published on `hotload:force-closed`. */
export interface HotloadForceClosedMessage {
  /** The pool's name (`hotload.name`) or its source's description. */
  readonly source: string;
  /** The retired generation whose connections were closed. */
  readonly generation: number;
  /** Connections closed under their holders. */
  readonly connections: number;
}

/** Channel name → message type, for {@link publishDiagnostic}. */
export interface HotloadChannelMessages {
  /** A watched source changed for real. */
  'hotload:change': HotloadChangeMessage;
  /** A watched source became invalid or unreadable. */
  'hotload:source-error': HotloadSourceErrorMessage;
  /** A verify attempt succeeded or failed. */
  'hotload:verify': HotloadVerifyMessage;
  /** New work moved to a new generation. */
  'hotload:switch': HotloadSwitchMessage;
  /** A retired generation closed its last connection. */
  'hotload:drained': HotloadDrainedMessage;
  /** A retired generation's connections in use hit the drain timeout. */
  'hotload:force-closed': HotloadForceClosedMessage;
}

/**
 * Publishes on a hotload channel. `build` runs only when someone subscribed, so an
 * unobserved lifecycle costs one property read per event.
 */
export function publishDiagnostic<N extends HotloadChannelName>(
  name: N,
  build: () => HotloadChannelMessages[N],
): void {
  const channel = diagnosticsChannel.channel(name);
  if (channel.hasSubscribers) channel.publish(build());
}
