/**
 * Members pg-pool's constructor sets from the options, which pg's typings do not declare
 * (so neither does the hotload Pool): `Promise`, the class of the promises `connect()`,
 * `query()` and `end()` return without a callback (the `Promise` option, else the global
 * one), and `log`, where pg-pool writes its debug lines (the `log` option, else a no-op).
 */
export interface PgPoolMembers {
  readonly Promise: PromiseConstructorLike;
  log(message: string): void;
}
