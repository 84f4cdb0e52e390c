/** Public API of hotload-core. */
export {
  AtomicSecretWriter,
  type AtomicSecretWriterOptions,
  type AtomicWriteResult,
  DATA_DIR_NAME,
  type SecretFile,
  type SecretPayload,
  writeSecretAtomically,
} from './atomic-writer.js';
export {
  type ConfigProblem,
  ConnectionConfig,
  type ConnectionConfigChanges,
  type ConnectionConfigInit,
  DEFAULT_PORT,
  type HostPort,
  type SslMode,
} from './config.js';
export { isSourceError, SourceError, type SourceErrorCode, type SourceErrorInit } from './errors.js';
export type { ChangeEvent, SourceWatcherOptions } from './events.js';
export { formatKeyValueDsn, formatUriDsn, quoteLibpqValue, toSecretFiles } from './format.js';
export { LIBPQ_KEYWORDS, SECRET_KEYWORDS, SSL_MODES } from './params.js';
export { REDACTED } from './redact.js';
export type { ConnectionSource, SourceKind, SourceSpec } from './source.js';
