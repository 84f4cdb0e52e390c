/** Waiting for one event: what the driver tests do around every switch and drain. */

/** What {@link nextEvent} needs of an emitter (any `EventEmitter`). */
export interface EventSource<T> {
  // `never`: emitters that type their events strictly (a hotload Pool, like pg.Pool, accepts
  // only the events it emits) are sources too; the payload type comes from the caller.
  on(event: never, listener: never): unknown;
  removeListener(event: string, listener: (payload: T) => void): unknown;
}

/** Resolves with the next `event` payload of `emitter` that satisfies `accept`. */
export function nextEvent<T>(
  emitter: EventSource<T>,
  event: string,
  accept: (payload: T) => boolean = () => true,
): Promise<T> {
  return new Promise((resolve) => {
    const listener = (payload: T): void => {
      if (!accept(payload)) return;
      emitter.removeListener(event, listener);
      resolve(payload);
    };
    (emitter.on as (event: string, listener: (payload: T) => void) => unknown).call(emitter, event, listener);
  });
}
