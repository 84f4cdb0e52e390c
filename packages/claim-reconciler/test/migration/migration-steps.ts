/** The migration's own steps in a plain move, in order (the secret publish is the reconciler's). */
export const MOVE_STEPS = [
  'copy-schema',
  'create-publication',
  'truncate-target-tables',
  'set-replication-login',
  'create-subscription',
  'hold-synchronous-apply',
  'advance-sequences',
  'lock-source-logins',
  'release-synchronous-apply',
  'drop-subscription',
  'drop-replication-slot',
  'drop-publication',
  'drop-replication-login',
] as const;
