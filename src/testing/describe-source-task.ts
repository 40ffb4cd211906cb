import { sourceTaskChecks } from './source-task-checks.js';
import type { SourceTaskContractOptions, SourceTaskUnderTest } from './source-task-contract.js';
import { vitestApi } from './vitest-api.js';

export {
  SOURCE_TASK_CHECKS,
  type SourceTaskCheck,
  type SourceTaskConfigContract,
  type SourceTaskContractOptions,
  type SourceTaskUnderTest,
} from './source-task-contract.js';

/** Real-time limit of one generated test; the checks themselves run in virtual time. */
const TEST_TIMEOUT_MS = 30_000;

/**
 * Generates, in one call, the vitest tests every source task should pass, run on the
 * {@link MockRuntime} in virtual time:
 *
 * - **config**: a valid connector config decodes and an invalid one fails with a problem that
 *   names each bad key; with `config.connector`, the connector names this task class and splits
 *   the valid config into task configs that are plain JSON (no class instances, functions, NaN...),
 *   as the worker stores them; every run gets its task config after a JSON round trip;
 * - **offsets**: source partitions and offsets round-trip through the task's codec as canonical
 *   JSON, decoding exactly (no undeclared key) as `PATCH /offsets` decodes them, and a stored offset that is not an object is rejected with its path;
 * - **restartAfterCrash** / **restartAfterStop**: the first records of each source partition are
 *   acknowledged and committed, the rest held back; after a crash (or a graceful stop) the new
 *   task resumes exactly after the committed offset: it repeats nothing at or before it and
 *   goes on with every record that was never acknowledged, in order;
 * - **restartWithHeartbeats**: a run with heartbeats on (for a task that has them) crashes in
 *   the middle of its data after a flush, with nothing held back (KIP-910 `updateOffsets`
 *   applies) and, for a task with heartbeats, again with the data after a heartbeat held back;
 *   each source partition must go on with the record that followed, in a plain run, the last
 *   one acknowledged: an offset ahead of records not yet polled loses them;
 * - **farFutureOffset**: started from `farFutureOffset(partition)`, the task yields nothing for
 *   that partition, and does not fail;
 * - **heartbeats** (for a task that overrides `produceHeartbeatRecords()`): at most one heartbeat
 *   per source partition per `heartbeat.interval.ms`, each with a partition and offset that
 *   decode exactly, none carrying the offset of a data record older than the data sent before it;
 * - **stop**: a graceful stop finishes within `task.shutdown.graceful.timeout.ms` with its poll
 *   round done, the task's `stop()` returned (neither hung nor threw), no timer left on the
 *   task's clock (a source stop() left running), and ends STOPPED.
 *
 * Every check can be skipped with a written reason (`skip: { farFutureOffset: 'why' }`); missing
 * options a check needs, unknown skip keys and empty reasons throw when the file is collected.
 * Call it at the top level of a test file. It registers vitest tests, so vitest must be installed
 * (an optional peer dependency of Tributary, used by `tributary-connect/testing` only).
 *
 * @param task - the task class under test, or a function that makes a new task (e.g. handing it
 *   a fake of the outside system; it is called for every run and restart)
 * @param options - configs and what the checks need; see {@link SourceTaskContractOptions}
 *
 * @example
 * A test file of the connector's project (a fragment: it imports the connector's own code):
 * ```ts fragment
 * import { describeSourceTask } from 'tributary-connect/testing';
 * import { DatagenConnector, DatagenTask } from '../src/index.js';
 *
 * describeSourceTask(DatagenTask, {
 *   config: {
 *     connector: DatagenConnector,
 *     valid: { topic: 'gen', rate: '0', 'max.records': '10', partitions: '2' },
 *     invalid: { rate: 'fast' },
 *     invalidKeys: ['topic', 'rate'],
 *   },
 *   skip: { farFutureOffset: 'a synthetic sequence goes on after any number' },
 * });
 * ```
 */
export function describeSourceTask<P, O, C>(
  task: SourceTaskUnderTest<P, O, C>,
  options: SourceTaskContractOptions<P, O, C>,
): void {
  const { taskName, checks } = sourceTaskChecks(task, options);
  const { describe, it } = vitestApi();
  describe(options.name ?? `${taskName} follows the source task contract`, () => {
    for (const check of checks) {
      if (check.skipped !== undefined) it.skip(`${check.title} [skipped: ${check.skipped}]`, () => {});
      else it(check.title, () => check.run(), TEST_TIMEOUT_MS);
    }
  });
}
