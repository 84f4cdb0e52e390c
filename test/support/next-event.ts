/** Waiting for one event: what the driver tests do around every switch and drain. */

/** What {@link nextEvent} needs of an emitter (any `EventEmitter`). */
export interface EventSource<T> {
  // `never`: emitters that type their events strictly (a hotload Pool, like pg.Pool, accepts
  // only the events it emits) are sources too; the payload type comes from the caller.
  on(event: never, listener: never): unknown;
  removeListener(event: string, listener: (payload: T) => void): unknown;
}

/** Options of {@link nextEvent}. */
export interface NextEventOptions {
  /**
   * How long to wait before rejecting with an error that names the event. Default
   * {@link DEFAULT_NEXT_EVENT_TIMEOUT_MILLIS}: well under vitest's 60 s test timeout, so a
   * missing event reads as "no 'drained' event within 15000 ms", not as a test timeout.
   */
  readonly timeoutMillis?: number;
}

/** Default wait of {@link nextEvent}. */
export const DEFAULT_NEXT_EVENT_TIMEOUT_MILLIS = 15_000;

/**
 * Resolves with the next `event` payload of `emitter` that satisfies `accept`; rejects
 * after `timeoutMillis` with an error naming the event (and the filter, when one is given).
 *
 * The rejection only fails whoever awaits the promise: a wait that was raced and lost (or
 * set up and never needed, because the test failed earlier) is not an unhandled rejection.
 */
export function nextEvent<T>(
  emitter: EventSource<T>,
  event: string,
  accept: (payload: T) => boolean = () => true,
  { timeoutMillis = DEFAULT_NEXT_EVENT_TIMEOUT_MILLIS }: NextEventOptions = {},
): Promise<T> {
  const waiting = new Promise<T>((resolve, reject) => {
    const listener = (payload: T): void => {
      if (!accept(payload)) return;
      clearTimeout(timer);
      emitter.removeListener(event, listener);
      resolve(payload);
    };
    const timer = setTimeout(() => {
      emitter.removeListener(event, listener);
      const filter = accept.length > 0 ? ` matching ${accept.toString()}` : '';
      reject(new Error(`nextEvent: no '${event}' event${filter} within ${timeoutMillis} ms`));
    }, timeoutMillis);
    // a pending wait does not keep a process alive on its own
    timer.unref();
    (emitter.on as (event: string, listener: (payload: T) => void) => unknown).call(emitter, event, listener);
  });
  waiting.catch(() => undefined);
  return waiting;
}

/**
 * Resolves once `holds()` is true: at once if it already is, else at the first `event` of
 * `emitter` after which it is. Rejects after the timeout with an error that says what was
 * awaited (`what`), so a wait for a state never reached fails loudly instead of running on.
 */
export async function untilHolds(
  emitter: EventSource<unknown>,
  event: string,
  holds: () => boolean,
  what: string,
  options: NextEventOptions = {},
): Promise<void> {
  if (holds()) return;
  try {
    await nextEvent(emitter, event, () => holds(), options);
  } catch (error) {
    throw new Error(`${what}: ${(error as Error).message}`);
  }
}

/**
 * The next `switch` of `emitter` and the drain of the generation it retired: resolves with
 * the switch's payload once that generation reported `drained`. Call it BEFORE the write
 * that causes the switch: both events are heard from then on. Waiting for `drained` only
 * once the switch was seen can miss it, because a switch and even its drain may come
 * before the write returns (the source reads the folder at the `..data` swap, and the
 * writer still has files to tidy up after it).
 */
export async function nextSwitchDrained<T extends { fromGeneration?: number }>(
  emitter: EventSource<T>,
  options: NextEventOptions = {},
): Promise<T> {
  const drained = new Set<number>();
  const onDrained = (event: { generation: number }): void => void drained.add(event.generation);
  (emitter.on as (event: string, listener: typeof onDrained) => unknown).call(emitter, 'drained', onDrained);
  try {
    const switched = await nextEvent<T>(emitter, 'switch', () => true, options);
    const retired = switched.fromGeneration;
    if (retired !== undefined && !drained.has(retired))
      await nextEvent<{ generation: number }>(
        emitter as unknown as EventSource<{ generation: number }>,
        'drained',
        (event) => event.generation === retired,
        options,
      );
    return switched;
  } finally {
    (emitter.removeListener as unknown as (event: string, listener: typeof onDrained) => unknown).call(
      emitter,
      'drained',
      onDrained,
    );
  }
}
