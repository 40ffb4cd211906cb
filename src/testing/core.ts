/**
 * The framework-free part of `tributary-connect/testing`: what the CommonJS build exports (vitest,
 * which the contract suite needs, cannot be loaded with `require`).
 * @module
 */

export type { PartitionFreshness, TaskMetricsSnapshot } from '../runtime/task-metrics.js';
export {
  type CapturedRecord,
  type CapturedRecordView,
  MockRuntime,
  type MockRuntimeOptions,
} from './mock-runtime.js';
export { MockSender, type RecordPredicate } from './mock-sender.js';
export { type Duration, toMillis, VirtualClock } from './virtual-clock.js';
