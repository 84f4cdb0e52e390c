/** Public API of hotload-knex: Knex on a hotload source. */

export { ForceClosedError } from 'hotload-pg';
export { createHotloadKnex, type HotloadKnex } from './create-hotload-knex.js';
export {
  type DrainedEvent,
  type ForceClosedEvent,
  type GenerationTarget,
  type HotloadKnexEventMap,
  HotloadKnexEvents,
  type SwitchEvent,
  type VerifyFailedEvent,
} from './events.js';
export { type HotloadKnexConfig, HotloadPgClient } from './hotload-pg-client.js';
export {
  type InstrumentKnexOptions,
  instrumentKnex,
  logKnexEvents,
  type ObservableKnexClient,
} from './knex-observability.js';
export type { KnexDefaultRecord } from './knex-typing.js';
export type { HotloadKnexOptions } from './options.js';
