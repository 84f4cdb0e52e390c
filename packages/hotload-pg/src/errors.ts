/**
 * hotload-core's `ForceClosedError`: one class for every driver, so `instanceof` holds
 * whichever package closed the connection.
 */
export { ForceClosedError } from 'hotload-core';
