/**
 * Test a Tributary task without Kafka, in virtual time.
 *
 * ```ts
 * import { MockRuntime } from 'tributary-connect/testing';
 * const run = await MockRuntime.start(MyTask, { config: { ... } });
 * await run.advanceBy('1h');
 * ```
 *
 * `describeSourceTask(MyTask, { ... })` generates the contract tests every source task should
 * pass. It registers vitest tests: vitest is an optional peer dependency, loaded when present,
 * so the rest of `tributary-connect/testing` works with any test framework. The CommonJS build leaves
 * the contract suite out (vitest cannot be loaded with `require`).
 * @module
 */

export {
  type CapturedRecord,
  type CapturedRecordView,
  type Duration,
  MockRuntime,
  type MockRuntimeOptions,
  MockSender,
  type PartitionFreshness,
  type RecordPredicate,
  type TaskMetricsSnapshot,
  toMillis,
  VirtualClock,
} from './core.js';
export {
  describeSourceTask,
  SOURCE_TASK_CHECKS,
  type SourceTaskCheck,
  type SourceTaskConfigContract,
  type SourceTaskContractOptions,
  type SourceTaskUnderTest,
} from './describe-source-task.js';
