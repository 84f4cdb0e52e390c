/**
 * hotload-knex as Knex users type their code: the `hotload` block is a field of
 * `Knex.Config` (module augmentation, the way Knex documents extending its types), so
 * `knex({ client: HotloadPgClient, hotload: {...} })` and a knexfile typed `Knex.Config`
 * compile, and instances default their row type exactly as `knex()` does.
 */
import type { HotloadKnexOptions } from './options.js';

declare module 'knex' {
  namespace Knex {
    // Declarations that merge must repeat knex's type parameter exactly.
    // biome-ignore lint/suspicious/noExplicitAny: knex declares `Config<SV extends {} = any>`
    interface Config<SV extends {} = any> {
      /**
       * hotload-knex: where the connection comes from and how switches behave. Read only
       * when `client` is `HotloadPgClient`; other clients ignore it.
       */
      hotload?: HotloadKnexOptions;
    }
  }
}

/**
 * The row type `knex()` gives an instance when none is named: knex declares
 * `knex<TRecord extends {} = any, ...>`, so code moved from `knex()` to
 * `createHotloadKnex()` keeps compiling. (It cannot be derived: `ReturnType` of a generic
 * function instantiates the constraint `{}`, not the default.)
 */
// biome-ignore lint/suspicious/noExplicitAny: the same default row type as knex() itself
export type KnexDefaultRecord = any;
