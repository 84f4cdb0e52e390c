import diagnosticsChannel from 'node:diagnostics_channel';
import { HOTLOAD_CHANNELS, type HotloadChannelName, type HotloadLogger } from 'hotload-core';

/** Every message published on a hotload channel, with the channel name. */
export interface CapturedMessage {
  readonly channel: HotloadChannelName;
  readonly message: unknown;
}

/** Subscribes to every hotload channel; `stop()` unsubscribes. */
export function captureDiagnostics(): { messages: CapturedMessage[]; stop: () => void } {
  const messages: CapturedMessage[] = [];
  const subscriptions = Object.values(HOTLOAD_CHANNELS).map((channel) => {
    const onMessage = (message: unknown) => messages.push({ channel, message });
    diagnosticsChannel.subscribe(channel, onMessage);
    return () => diagnosticsChannel.unsubscribe(channel, onMessage);
  });
  return {
    messages,
    stop: () => {
      for (const unsubscribe of subscriptions) unsubscribe();
    },
  };
}

/** One captured log line: level, fields and message, as pino would print them. */
export interface CapturedLine {
  readonly level: 'debug' | 'info' | 'warn' | 'error';
  readonly fields: object;
  readonly msg: string | undefined;
}

/** A logger that keeps every line. */
export function captureLogger(): { logger: HotloadLogger; lines: CapturedLine[] } {
  const lines: CapturedLine[] = [];
  const at =
    (level: CapturedLine['level']) =>
    (fields: object, msg?: string): void => {
      lines.push({ level, fields, msg });
    };
  return { logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, lines };
}
