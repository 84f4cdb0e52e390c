/** hotload-generic-pool: bring your own client; a generic-pool per generation follows the source. */
export { ForceClosedError } from 'hotload-core';
export type { ClientFactory } from './client-factory.js';
export type { Generation, GenericPoolOptions } from './generation.js';
export { GenericPoolDriver } from './generic-pool-driver.js';
export { HotloadGenericPool, type HotloadGenericPoolOptions } from './hotload-generic-pool.js';
