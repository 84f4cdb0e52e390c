/** Public API of hotload-core. */
export {
  AtomicSecretWriter,
  type AtomicSecretWriterOptions,
  type AtomicWriteOptions,
  type AtomicWriteResult,
  type AtomicWriteStep,
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
export { createSource } from './create-source.js';
export {
  HOTLOAD_CHANNELS,
  type HotloadChangeMessage,
  type HotloadChannelMessages,
  type HotloadChannelName,
  type HotloadDrainedMessage,
  type HotloadForceClosedMessage,
  type HotloadSourceErrorMessage,
  type HotloadSwitchMessage,
  type HotloadVerifyMessage,
  publishDiagnostic,
} from './diagnostics/channels.js';
export {
  CERT_MANAGER_FILES,
  DSN_KEYS,
  KEY_FILE_ALIASES,
  MergedDirectoriesSource,
  SecretDirectorySource,
} from './directory-source.js';
export {
  type DsnParseResult,
  type DsnProblem,
  isUriDsn,
  parseDsn,
  parseKeyValueDsn,
  parseUriDsn,
} from './dsn.js';
export { DsnFileSource } from './dsn-file-source.js';
export { isSourceError, SourceError, type SourceErrorCode, type SourceErrorInit } from './errors.js';
export type { ChangeEvent, SourceWatcherOptions, WatchMode } from './events.js';
export type { FileReadMode, FileSourceOptions } from './file-reads.js';
export { formatKeyValueDsn, formatUriDsn, quoteLibpqValue, toSecretFiles } from './format.js';
export { LIBPQ_ENV_VARS, LibpqEnvironmentSource } from './libpq-env-source.js';
export {
  backoffDelay,
  ConnectionBudget,
  CREDENTIAL_FAILURE_CODES,
  type CredentialWaitCheckout,
  type CredentialWaitLifecycle,
  checkoutWithCredentialWait,
  type DrainedEvent,
  ForceClosedError,
  type ForceClosedEvent,
  type GenerationDriver,
  GenerationManager,
  type GenerationTarget,
  type InstrumentLifecycleOptions,
  instrumentLifecycle,
  isCredentialFailure,
  isFailoverSignal,
  isMultiHost,
  type LifecycleEvents,
  type LifecycleOptions,
  logLifecycleEvents,
  type ObservableLifecycle,
  publishLifecycleDiagnostics,
  ReadOnlyHostError,
  type ResolvedLifecycleOptions,
  requiresWritable,
  resolveLifecycleOptions,
  type SourceErrorEvent,
  type SwitchEvent,
  type TlsCheck,
  TlsVerifyError,
  type VerifyFailedEvent,
  type VerifySession,
} from './lifecycle/index.js';
export { type HotloadLogger, type LoggedError, loggedError, silentLogger } from './logging/logger.js';
export {
  type ConnectionCounts,
  HOTLOAD_METRIC_NAMES,
  HotloadMetrics,
  type HotloadMetricsOptions,
} from './metrics/hotload-metrics.js';
export { loadPromClient } from './metrics/prom-client-loader.js';
export type {
  PromClientModule,
  PromCounter,
  PromGauge,
  PromHistogram,
  PromLabelValues,
  PromMetric,
  PromMetricConfiguration,
  PromRegistry,
} from './metrics/prom-client-types.js';
export { LIBPQ_KEYWORDS, SECRET_KEYWORDS, SSL_MODES } from './params.js';
export { type CancelTarget, type PgWireModule, sendCancelRequest } from './pg/cancel-request.js';
export { type ForceClosablePgClient, forceClosePgClient } from './pg/force-close-pg-client.js';
export {
  libpqTlsOptions,
  type PgClientSettings,
  type PgConnectionFields,
  toPgClientSettings,
} from './pg/to-pg-config.js';
export { lookupPgpass, type PgpassQuery } from './pgpass.js';
export { MAX_SOURCE_FILE_BYTES } from './read-file.js';
export { REDACTED, RedactedError, redactError } from './redact.js';
export type {
  BuiltInSourceKind,
  ConnectionSource,
  SourceKind,
  SourceSnapshot,
  SourceSpec,
} from './source.js';
export { SourceWatcher, type SourceWatcherEvents } from './source-watcher.js';
export { orderSrvRecords, SrvSource, type SrvSourceOptions } from './srv-source.js';
