/**
 * The logger hotload's libraries write to: pino's method signature (`logger.info(obj, msg)`),
 * so a pino logger (or a child of one) can be passed as is; anything with the four methods
 * works too. Libraries log nothing unless given one.
 */
export interface HotloadLogger {
  /** Logs at debug level: `obj`'s fields, then `msg`. */
  debug(obj: object, msg?: string): void;
  /** Logs at info level (hotload: a source change, a switch, a drained generation). */
  info(obj: object, msg?: string): void;
  /** Logs at warn level (hotload: an invalid source, a failed verify, a force-close). */
  warn(obj: object, msg?: string): void;
  /** Logs at error level. */
  error(obj: object, msg?: string): void;
}

const ignore = (): void => {};

/** The default logger: drops everything. */
export const silentLogger: HotloadLogger = Object.freeze({
  debug: ignore,
  info: ignore,
  warn: ignore,
  error: ignore,
});

/** A secret-free, plain-object view of an error for a log line (pino's `err` field shape). */
export interface LoggedError {
  /** The error's `name` (`Error`, `SourceError`, `ForceClosedError` ...). */
  readonly type: string;
  /** The error's message (already secret-free: see {@link loggedError}). */
  readonly message: string;
  /** The error's `code` (a SQLSTATE, an errno, `HOTLOAD_FORCE_CLOSED` ...), when it has a string one. */
  readonly code?: string;
}

/**
 * The fields a log line may carry for an error: its name, message and code, nothing else.
 * Errors can hold far more (pg's carry the client and its config; Node's `ERR_INVALID_URL`
 * carries the whole connection string as `input`), and loggers serialize every enumerable
 * property, so only these three leave. The message must already be secret-free: pass
 * errors through `redactError` (or use a `SourceError`, secret-free by
 * construction) first.
 */
export function loggedError(error: unknown): LoggedError {
  const source = error instanceof Error ? error : new Error(String(error));
  const code = (source as { code?: unknown }).code;
  return typeof code === 'string'
    ? { type: source.name, message: source.message, code }
    : { type: source.name, message: source.message };
}
