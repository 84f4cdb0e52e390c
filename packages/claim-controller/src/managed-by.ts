/** The label the controller puts on what it creates, in a module of its own: the Secret sink,
 * the Secret cache (its label selector) and the records ConfigMap all use it. */

/** Label on every Secret (and the records ConfigMap) the controller writes. */
export const MANAGED_BY_LABEL = { 'app.kubernetes.io/managed-by': 'hotload-claim-reconciler' } as const;
