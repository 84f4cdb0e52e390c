/** A node-style callback (pg's connect callback also gets a third argument, `release`). */
export type NodeCallback<T> = (err: Error | undefined, value?: T, ...extra: never[]) => void;

/** A node-style callback and, when the caller gave none, the promise it settles. */
export interface Promisified<T> {
  callback: NodeCallback<T>;
  result: Promise<T> | undefined;
}

/**
 * pg-pool's promisify: use the caller's callback if there is one, else make a promise.
 * On rejection the stack is recaptured so it leads back to the application, not to
 * the socket read that produced the error.
 */
export function promisify<T>(callback: NodeCallback<T> | undefined): Promisified<T> {
  if (callback !== undefined) return { callback, result: undefined };
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const result = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  }).catch((err: Error) => {
    Error.captureStackTrace(err);
    throw err;
  });
  return { callback: (err, value) => (err ? reject(err) : resolve(value as T)), result };
}
