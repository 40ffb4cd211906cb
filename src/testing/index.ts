/**
 * Test a Tributary task without Kafka, in virtual time.
 *
 * ```ts
 * import { MockRuntime } from 'tributary/testing';
 * const run = await MockRuntime.start(MyTask, { config: { ... } });
 * await run.advanceBy('1h');
 * ```
 * @module
 */

export {
  type CapturedRecord,
  type CapturedRecordView,
  MockRuntime,
  type MockRuntimeOptions,
} from './mock-runtime.js';
export { MockSender, type RecordPredicate } from './mock-sender.js';
export { type Duration, toMillis, VirtualClock } from './virtual-clock.js';
