/** Waiting for one event: what the driver tests do around every switch and drain. */

/** What {@link nextEvent} needs of an emitter (any `EventEmitter`). */
export interface EventSource<T> {
  on(event: string, listener: (payload: T) => void): unknown;
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
    emitter.on(event, listener);
  });
}
