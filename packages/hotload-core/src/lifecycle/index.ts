/** The generation lifecycle: one manager, small driver interface (see `GenerationManager`). */
export { backoffDelay } from './backoff.js';
export {
  type CredentialWaitCheckout,
  type CredentialWaitLifecycle,
  checkoutWithCredentialWait,
} from './checkout-with-credential-wait.js';
export { ConnectionBudget } from './connection-budget.js';
export { CREDENTIAL_FAILURE_CODES, isCredentialFailure } from './credential-failure.js';
export type { GenerationDriver, VerifySession } from './driver.js';
export type {
  DrainedEvent,
  ForceClosedEvent,
  GenerationTarget,
  LifecycleEvents,
  SourceErrorEvent,
  SwitchEvent,
  VerifyFailedEvent,
} from './events.js';
export { isFailoverSignal } from './failover-signal.js';
export { ForceClosedError } from './force-closed-error.js';
export { GenerationManager } from './generation-manager.js';
export { isMultiHost, ReadOnlyHostError, requiresWritable } from './host-selection.js';
export { publishLifecycleDiagnostics } from './lifecycle-diagnostics.js';
export { logLifecycleEvents } from './lifecycle-logging.js';
export { type InstrumentLifecycleOptions, instrumentLifecycle } from './lifecycle-metrics.js';
export type { ObservableLifecycle } from './observable.js';
export { type LifecycleOptions, type ResolvedLifecycleOptions, resolveLifecycleOptions } from './options.js';
export { type TlsCheck, TlsVerifyError } from './tls-verify-error.js';
