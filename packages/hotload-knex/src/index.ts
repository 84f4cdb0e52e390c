/** Public API of hotload-knex: Knex on a hotload source. */

export { ForceClosedError } from 'hotload-core';
export { createHotloadKnex, type HotloadKnex } from './create-hotload-knex.js';
export type {
  DrainedEvent,
  ForceClosedEvent,
  GenerationTarget,
  HotloadKnexEventMap,
  SourceErrorEvent,
  SwitchEvent,
  VerifyFailedEvent,
} from './events.js';
export {
  type HotloadKnexClient,
  type HotloadKnexConfig,
  type HotloadKnexLifecycle,
  HotloadPgClient,
  type HotloadPgClientClass,
  type KnexClientClass,
  withHotload,
} from './hotload-pg-client.js';
export type { PgProbeClient } from './knex-driver.js';
export type { KnexDefaultRecord } from './knex-typing.js';
export type { HotloadKnexOptions } from './options.js';
