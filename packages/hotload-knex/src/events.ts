/** hotload-knex's events are hotload-core's lifecycle events (one event map for every driver). */
export type {
  DrainedEvent,
  ForceClosedEvent,
  GenerationTarget,
  LifecycleEvents as HotloadKnexEventMap,
  SourceErrorEvent,
  SwitchEvent,
  VerifyFailedEvent,
} from 'hotload-core';
