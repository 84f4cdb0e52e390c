/**
 * Test support shared by every package's tests: throwaway PostgreSQL clusters and a TCP
 * fault proxy. Import it as `hotload-test-support`.
 */
export {
  APP_DATABASE,
  type AppUser,
  createAppDatabase,
  newPassword,
  SecretDirectory,
  sessionsOf,
  sessionsOfAfterExit,
  setPassword,
} from './app-database.js';
export { FaultProxy, type ProxyTarget } from './fault-proxy.js';
export { findLeftoverClusters, removeLeftoverClusters } from './leftover-clusters.js';
export { locatePostgresBinaries, type PostgresBinaries } from './postgres-binaries.js';
export {
  CLUSTER_DIR_PREFIX,
  type ClusterOptions,
  type ConnectionConfig,
  PostgresCluster,
  startCluster,
} from './postgres-cluster.js';
