/**
 * The worker runtime: the task pipeline and the ports its adapters implement. For embedding
 * Tributary in your own process; connector authors need only `tributary-connect`.
 *
 * The entry `tributary-connect/runtime` (built to dist/runtime/index.*). It stands beside
 * src/index.ts, not inside src/runtime/, because it hands on the layers above the runtime too
 * (metrics, REST, storage, the embedded sender, transforms): nothing in src/runtime/ imports it.
 * @module
 */

export { JsonLinesSender, type JsonLinesTarget } from './embedded/json-lines-sender.js';
export { type ConnectorView, METRICS, type MetricDefinition, type TaskView } from './metrics/metric-table.js';
export { type MetricsListener, resolveMetricsListener } from './metrics/metrics-listener.js';
export { MetricsServer } from './metrics/metrics-server.js';
export {
  type MetricsSettings,
  metricsConfig,
  registerMetrics,
  resolveMetricsSettings,
  WorkerMetrics,
  type WorkerMetricsOptions,
} from './metrics/worker-metrics.js';
export { type CrossOriginPolicy, type RestOptions, RestServer, resolveRestOptions } from './rest/index.js';
export { type CheckKeysOptions, checkKeys, type KeyCheck, type KnownKeys, mergeKnownKeys } from './runtime/config-keys.js';
export { bytesConverter, type Converter, type ConverterName, jsonConverter, stringConverter } from './runtime/converters.js';
export type {
  OffsetEntry,
  OffsetStore,
  OutgoingRecord,
  RecordMetadata,
  RecordSender,
  SendCallback,
  SenderStall,
} from './runtime/ports.js';
export {
  type PartitionFreshness,
  TaskMetrics,
  type TaskMetricsOptions,
  type TaskMetricsSnapshot,
} from './runtime/task-metrics.js';
export {
  type FlushOutcome,
  type TaskErrorCounts,
  type TaskListener,
  type TaskProbe,
  TaskRunner,
  type TaskRunnerOptions,
} from './runtime/task-runner.js';
export { DEFAULT_HEARTBEAT_TOPIC, resolveTaskSettings, type TaskSettings } from './runtime/task-settings.js';
export type { TaskState, TaskStatus } from './runtime/task-status.js';
export {
  type AliasKey,
  type AliasKeys,
  NO_TRANSFORMS,
  type PreparedTransforms,
  prepareTransforms,
  type TransformChain,
  type TransformChainFactory,
  type TransformPluginLoader,
} from './runtime/transform-chain.js';
export {
  type ConnectorState,
  type ConnectorStatus,
  type CreateOptions,
  type PluginAccess,
  type SenderContext,
  type TargetState,
  Worker,
  type WorkerOptions,
} from './runtime/worker.js';
export { ConnectorOffsetStore, type ConnectorOffsetStoreOptions } from './storage/connector-offset-store.js';
export { FileOffsetStore } from './storage/file-offset-store.js';
export { MemoryOffsetStore } from './storage/memory-offset-store.js';
export { BUILTIN_PREDICATES, BUILTIN_TRANSFORMS } from './transforms/index.js';
