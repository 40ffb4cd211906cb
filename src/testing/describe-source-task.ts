import type { ConfigDef } from '../api/config-def.js';
import type { SourceConnectorClass } from '../api/source-connector.js';
import type { OffsetUpdate, SourceRecord } from '../api/source-record.js';
import type { SourceTask } from '../api/source-task.js';
import { type SourceTaskCheck, sourceTaskChecks } from './source-task-checks.js';
import type { Duration } from './virtual-clock.js';
import { vitestApi } from './vitest-api.js';

export { SOURCE_TASK_CHECKS, type SourceTaskCheck } from './source-task-checks.js';

/** Real-time limit of one generated test; the checks themselves run in virtual time. */
const TEST_TIMEOUT_MS = 30_000;

/**
 * The task {@link describeSourceTask} checks: its class, or a function that makes a new
 * instance (to hand it a fake of the outside system, for instance), called for every run.
 */
export type SourceTaskUnderTest<P, O, C> = (new () => SourceTask<P, O, C>) | (() => SourceTask<P, O, C>);

/** What the `config` check of {@link describeSourceTask} parses. */
export interface SourceTaskConfigContract {
  /**
   * The connector whose `config` definition is checked. With it the suite also checks that the
   * connector names the task class and splits a valid config into JSON task configs, and it
   * can derive the task config of every run from `valid`.
   */
  readonly connector?: SourceConnectorClass;
  /** A config definition to check instead of a connector's. */
  readonly definition?: ConfigDef<unknown>;
  /** A connector config that must decode, as a connector file gives it (strings are fine). */
  readonly valid: Readonly<Record<string, unknown>>;
  /** A connector config that must not decode; every problem must name its key. */
  readonly invalid: Readonly<Record<string, unknown>>;
  /** Keys the problems of `invalid` must include. Default: at least one problem. */
  readonly invalidKeys?: readonly string[];
}

/** Options of {@link describeSourceTask}. Durations are virtual time. */
export interface SourceTaskContractOptions<P, O, C> {
  /** Name of the generated `describe` block. Default: `<TaskClass> follows the source task contract`. */
  readonly name?: string;
  /**
   * The task config every run starts with, as the connector's `taskConfigs` gives it. A
   * function is called for each run (e.g. to write fresh fixture files). Default: the first task
   * config the `config.connector` makes of `config.valid`. Each run gets it after a JSON round
   * trip, as the worker stores task configs (distributed mode's config topic).
   */
  readonly taskConfig?: C | (() => C | Promise<C>);
  /** The config check's input; required unless `skip.config` says why not. */
  readonly config?: SourceTaskConfigContract;
  /** Runtime-owned connector configs for every run (converters, ...). The checks set the heartbeat ones. */
  readonly connectorConfig?: Readonly<Record<string, unknown>>;
  /** Worker configs for every run (`task.shutdown.graceful.timeout.ms`, ...). */
  readonly workerConfig?: Readonly<Record<string, unknown>>;
  /** How long each run lasts in virtual time. Default `'10s'`. The task config should make it produce a few records, not millions. */
  readonly runFor?: Duration;
  /**
   * What tells two records of one source partition apart, in the order the task emits them:
   * the restart checks compare records by it. Default: the record's source offset as canonical
   * JSON, which suits tasks whose offset moves with every record.
   */
  readonly sequence?: (record: SourceRecord<P, O>) => string | number | bigint;
  /** Records the restart checks let Kafka acknowledge per source partition before holding the rest back. Default 2. */
  readonly ackedBeforeRestart?: number;
  /** Partitions and offsets for the `offsets` and `farFutureOffset` checks. Default: those of the records a first run produces. */
  readonly samples?: ReadonlyArray<OffsetUpdate<P, O>>;
  /** An offset beyond anything the source has, for a partition: starting there must yield nothing. Required unless skipped. */
  readonly farFutureOffset?: (partition: P) => O;
  /** `heartbeat.interval.ms` of the heartbeat check, unless `connectorConfig` sets one. Default 1000. */
  readonly heartbeatIntervalMs?: number;
  /**
   * Checks not to run, each with the reason why this task need not pass it, e.g.
   * `{ heartbeats: 'this source has no idle state' }`. An empty reason is an error. The
   * heartbeat check is skipped on its own for a task that does not override
   * `produceHeartbeatRecords()`.
   */
  readonly skip?: { readonly [K in SourceTaskCheck]?: string };
}

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
