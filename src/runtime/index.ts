/**
 * The worker runtime: the task pipeline and the ports its adapters implement. For embedding
 * Tributary in your own process; connector authors need only `tributary`.
 * @module
 */

export { JsonLinesSender, type JsonLinesTarget } from '../embedded/json-lines-sender.js';
export { type ConnectorView, METRICS, type MetricDefinition, type TaskView } from '../metrics/metric-table.js';
export { MetricsServer } from '../metrics/metrics-server.js';
export {
  type MetricsSettings,
  metricsConfig,
  registerMetrics,
  resolveMetricsSettings,
  WorkerMetrics,
  type WorkerMetricsOptions,
} from '../metrics/worker-metrics.js';
export { type RestOptions, RestServer } from '../rest/index.js';
export { FileOffsetStore } from '../storage/file-offset-store.js';
export { MemoryOffsetStore } from '../storage/memory-offset-store.js';
export { bytesConverter, type Converter, type ConverterName, jsonConverter, stringConverter } from './converters.js';
export type {
  OffsetEntry,
  OffsetStore,
  OutgoingRecord,
  RecordMetadata,
  RecordSender,
  SendCallback,
} from './ports.js';
export {
  type PartitionFreshness,
  TaskMetrics,
  type TaskMetricsOptions,
  type TaskMetricsSnapshot,
} from './task-metrics.js';
export { type FlushOutcome, type TaskListener, type TaskProbe, TaskRunner, type TaskRunnerOptions } from './task-runner.js';
export { DEFAULT_HEARTBEAT_TOPIC, resolveTaskSettings, type TaskSettings } from './task-settings.js';
export type { TaskState, TaskStatus } from './task-status.js';
export {
  type ConnectorState,
  type ConnectorStatus,
  type CreateOptions,
  type SenderContext,
  type TargetState,
  Worker,
  type WorkerOptions,
} from './worker.js';
