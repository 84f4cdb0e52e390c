/** hotload-postgres-js: a postgres.js `sql` that follows rotating credentials. */
export { ForceClosedError } from 'hotload-core';
export { createHotloadSql, type HotloadSql, type HotloadSqlOptions } from './hotload-sql.js';
export { type PostgresGeneration, PostgresJsDriver } from './postgres-js-driver.js';
