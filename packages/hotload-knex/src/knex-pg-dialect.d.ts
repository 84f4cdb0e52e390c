/**
 * Knex ships no type declarations for its dialect modules. Its PostgreSQL client class has
 * the public shape of the base `Knex.Client` (which knex does type), so that is what the
 * dialect module is declared as.
 */
declare module 'knex/lib/dialects/postgres/index.js' {
  import type { Knex } from 'knex';

  const Client_PG: typeof Knex.Client;
  export default Client_PG;
}
