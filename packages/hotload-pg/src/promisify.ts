/** A node-style callback (pg's connect callback also gets a third argument, `release`). */
export type NodeCallback<T> = (err: Error | undefined, value?: T, ...extra: never[]) => void;

/** A node-style callback and, when the caller gave none, the promise it settles. */
export interface Promisified<T> {
  callback: NodeCallback<T>;
  result: Promise<T> | undefined;
}

/**
 * pg-pool's promisify: use the caller's callback if there is one, else make a promise of
 * the pool's `Promise` class (pg's `Promise` option, the global one by default: pg-pool
 * returns that class's promises, and programs that pass one test for it). As pg-pool, a
 * falsy callback (`end(false)`, `query(text, null)`) means "no callback". On rejection
 * the stack is recaptured so it leads back to the application, not to the socket read
 * that produced the error.
 */
export function promisify<T>(
  PromiseClass: PromiseConstructorLike,
  callback: NodeCallback<T> | null | false | undefined,
): Promisified<T> {
  if (callback) return { callback, result: undefined };
  let resolve!: (value: T) => void;
  let reject!: (err: Error) => void;
  const result = new PromiseClass<T>((res, rej) => {
    resolve = res;
    reject = rej;
  }).then(undefined, (err: Error) => {
    Error.captureStackTrace(err);
    throw err;
  }) as Promise<T>;
  return { callback: (err, value) => (err ? reject(err) : resolve(value as T)), result };
}

/** A promise of `PromiseClass` rejected with `err` (pg-pool's `this.Promise.reject(err)`). */
export function rejectedWith<T>(PromiseClass: PromiseConstructorLike, err: Error): Promise<T> {
  return new PromiseClass<T>((_resolve, reject) => reject(err)) as Promise<T>;
}
