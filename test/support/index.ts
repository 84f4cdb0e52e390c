/**
 * Test support shared by every package's tests: throwaway PostgreSQL clusters, a TCP
 * fault proxy, waiting for an event and a steady worker load. Import it as
 * `hotload-test-support`.
 */
export {
  APP_DATABASE,
  type AppUser,
  createAppDatabase,
  newPassword,
  SecretDirectory,
  type ServerAddress,
  sessionsOf,
  sessionsOfAfterExit,
  sessionsStartedBeforeAfterExit,
  setPassword,
} from './app-database.js';
export { type AppDatabaseSuite, type RotatingDriver, useAppDatabases } from './app-database-suite.js';
export { type SrvAnswer, TestDnsServer } from './dns-server.js';
export { FakeKubelet } from './fake-kubelet.js';
export { FaultProxy, type ProxyTarget } from './fault-proxy.js';
export { isolatedNodeEnv } from './isolated-env.js';
export {
  type AuditEntry,
  CONTROL_PLANE_DIR_PREFIX,
  type ControlPlaneLocation,
  KubeControlPlane,
  locateControlPlane,
  type ProcessOutput,
  processOutput,
  runProcess,
  startControlPlane,
} from './kube-control-plane.js';
export { KubeFaultProxy, type ProxiedRequest } from './kube-fault-proxy.js';
export {
  BUILTIN_TYPES,
  KubeApiError,
  type KubeChange,
  type KubeMetadata,
  type KubeObject,
  KubeObjects,
  type KubeResourceType,
  type WatchEventType,
} from './kube-objects.js';
export {
  CLAIM_RESOURCE,
  CONTROLLER_SERVICE_ACCOUNT,
  DEPLOY_DIR,
  describeOnControlPlane,
  type KubeTestBed,
  kubectlApply,
  NOT_RUN_MARK,
  startKubeTestBed,
  useKubeTestBed,
} from './kube-test-bed.js';
export {
  findLeftoverClusters,
  findLeftoverControlPlanes,
  isAlive,
  removeLeftoverClusters,
} from './leftover-clusters.js';
export {
  DEFAULT_NEXT_EVENT_TIMEOUT_MILLIS,
  type EventSource,
  type NextEventOptions,
  nextEvent,
  nextSwitchDrained,
  untilHolds,
} from './next-event.js';
export { locatePostgresBinaries, type PostgresBinaries, unprivilegedUser } from './postgres-binaries.js';
export {
  CLUSTER_DIR_PREFIX,
  type ClusterOptions,
  type ClusterTls,
  type ConnectionConfig,
  freePort,
  LOGICAL_REPLICATION_SETTINGS,
  PostgresCluster,
  startCluster,
} from './postgres-cluster.js';
export { RereadHookSource } from './reread-hook-source.js';
export { findLeaks, leakForms, renderings } from './secret-scan.js';
export { type CliRun, runSourceCli, startSourceCli } from './source-cli.js';
export { createTestCa, type IssueOptions, TestCa, type TestCertificate, writeTlsFiles } from './test-ca.js';
export { WorkerLoad } from './worker-load.js';
