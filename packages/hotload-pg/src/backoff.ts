/** The lifecycle's capped, jittered exponential backoff (hotload-core), shared by every driver. */
export { backoffDelay } from 'hotload-core';
