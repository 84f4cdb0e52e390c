import type { HostPort } from '../config.js';
import type { GenerationDriver, VerifySession } from './driver.js';
import { ReadOnlyHostError } from './host-selection.js';

/** What one verify of a candidate checks besides `SELECT 1`. */
export interface VerifyChecks<Client> {
  /** target_session_attrs asks for a writable host: `SHOW transaction_read_only` must say `off`. */
  readonly requireWritable: boolean;
  /** The user's hook, run last on the verify connection. */
  readonly prepare: ((client: Client) => Promise<void>) | undefined;
  /** Aborted on timeout, cancel or supersede: the verify rejects with its reason at once. */
  readonly signal: AbortSignal;
}

/**
 * Proves a candidate works on one of its connections: `SELECT 1`, the read-write check
 * when asked, then the `prepare` hook. The connection goes back to the candidate (a warm
 * idle connection for the first work after the switch), or is dropped on failure.
 * Rejects with the connect, query or hook error, or with the signal's reason.
 */
export async function verifyCandidate<Generation, Client>(
  driver: GenerationDriver<Generation, Client, unknown>,
  candidate: Generation,
  host: HostPort,
  checks: VerifyChecks<Client>,
): Promise<void> {
  const { signal } = checks;
  const session = await untilAborted(driver.connect(candidate, signal), signal, (late) => late.release());
  try {
    await untilAborted(session.query('SELECT 1'), signal);
    if (checks.requireWritable) {
      const rows = await untilAborted(session.query('SHOW transaction_read_only'), signal);
      if (rows[0]?.transaction_read_only !== 'off') throw new ReadOnlyHostError(host.host, host.port);
    }
    if (checks.prepare) await untilAborted(runHook(checks.prepare, session), signal);
  } catch (error) {
    session.release(asError(error));
    throw error;
  }
  session.release();
}

async function runHook<Client>(prepare: (client: Client) => Promise<void>, session: VerifySession<Client>) {
  try {
    await prepare(session.client);
  } catch (error) {
    throw error instanceof Error ? error : new Error(`prepare hook failed: ${String(error)}`);
  }
}

/**
 * `promise`, or a rejection with the signal's reason as soon as it aborts (a connect or
 * query the server never answers must not hold a cancelled verify). A value that arrives
 * after the abort goes to `late`, so a connection is not leaked.
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal, late?: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(asError(signal.reason));
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) late?.(value);
        else resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(asError(error));
      },
    );
  });
}

function asError(value: unknown): Error {
  return value instanceof Error ? value : new Error(String(value ?? 'verify failed'));
}
