/**
 * A `create` that failed, handed through generic-pool as if it were a client.
 *
 * generic-pool answers a failing `factory.create` by calling it again at once for as long
 * as anyone waits (until `acquireTimeoutMillis`, if set at all): a wrong password would
 * become a connection storm and every checkout would hang. Wrapped in this, the failure
 * reaches the one checkout that caused it, which fails fast with the real error as
 * pg.Pool's would, and the placeholder is destroyed.
 */
export class FailedCreate {
  constructor(readonly error: unknown) {}
}
