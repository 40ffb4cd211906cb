/**
 * The source task contract's options (what `describeSourceTask` takes) and their resolution
 * into what every check shares: the validated options with defaults, a launcher of mock runs,
 * and one probing run. The checks themselves are in ./source-task-checks.ts and
 * ./restart-checks.ts.
 */
import { canonicalJson } from '../api/canonical-json.js';
import type { ConfigDef } from '../api/config-def.js';
import { type Logger, silentLogger } from '../api/logger.js';
import type { OffsetCodec } from '../api/offset-codec.js';
import type { SourceConnectorClass } from '../api/source-connector.js';
import type { OffsetUpdate, SourceRecord } from '../api/source-record.js';
import { hasDefaultHeartbeats, isSourceTaskClass, type SourceTask } from '../api/source-task.js';
import { type CapturedRecord, type CapturedRecordView, MockRuntime } from './mock-runtime.js';
import { type Duration, toMillis } from './virtual-clock.js';

/** The checks `describeSourceTask` generates, by the name `skip` uses. */
export const SOURCE_TASK_CHECKS = [
  'config',
  'offsets',
  'restartAfterCrash',
  'restartAfterStop',
  'restartWithHeartbeats',
  'farFutureOffset',
  'heartbeats',
  'stop',
] as const;

/** The name of one check of `describeSourceTask`, as a key of its `skip` option. */
export type SourceTaskCheck = (typeof SOURCE_TASK_CHECKS)[number];

/** The connector name of every run. */
export const CONTRACT_CONNECTOR = 'contract-test';
/** The heartbeat topic of the runs with heartbeats on. */
export const HEARTBEAT_TOPIC = 'contract.heartbeats';

/**
 * The task `describeSourceTask` checks: its class, or a function that makes a new
 * instance (to hand it a fake of the outside system, for instance), called for every run.
 */
export type SourceTaskUnderTest<P, O, C> = (new () => SourceTask<P, O, C>) | (() => SourceTask<P, O, C>);

/** What the `config` check of `describeSourceTask` parses. */
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

/** Options of `describeSourceTask`. Durations are virtual time. */
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

/** The options, validated and with defaults, plus the helpers every check shares. */
export interface Contract<P, O, C> {
  readonly task: SourceTaskUnderTest<P, O, C>;
  /** The class of the task's instances. */
  readonly taskClass: Function;
  readonly taskName: string;
  readonly options: SourceTaskContractOptions<P, O, C>;
  readonly skipped: Map<SourceTaskCheck, string>;
  readonly runFor: Duration;
  readonly runForMs: number;
  readonly ackedBeforeRestart: number;
  readonly heartbeatIntervalMs: number;
  /** The task overrides produceHeartbeatRecords(): runs with heartbeats on make some. */
  readonly hasHeartbeats: boolean;
  readonly codec: OffsetCodec<P, O>;
  readonly partitionKey: (partition: P) => string;
  readonly sequence: (record: SourceRecord<P, O>) => string;
  readonly launch: (extra?: LaunchOptions<P, O>) => Promise<MockRuntime<P, O, C>>;
  /** Data records of one plain run (heartbeats off), made once and shared by the checks that need samples. */
  readonly probe: () => Promise<Probe<P, O>>;
}

/** What one plain run of `runFor` produced. */
export interface Probe<P, O> {
  /** Its data records, in the order they were acknowledged (the order the task emitted them). */
  readonly records: ReadonlyArray<CapturedRecord<P, O>>;
  /** Virtual time when the task had started (ms since the epoch), to read `ackedAt` against. */
  readonly startedAt: number;
}

/** What a run launched by {@link Contract.launch} changes from the plain one. */
export interface LaunchOptions<P, O> {
  readonly connectorConfig?: Readonly<Record<string, unknown>>;
  readonly committedOffsets?: ReadonlyArray<OffsetUpdate<P, O>>;
  readonly holdAcks?: (record: CapturedRecordView<P, O>) => boolean;
  readonly logger?: Logger;
}

/**
 * Validates the options of `describeSourceTask` for `task` and makes what every check shares;
 * a TypeError naming the option when they are incomplete.
 */
export function resolveContract<P, O, C>(
  task: SourceTaskUnderTest<P, O, C>,
  options: SourceTaskContractOptions<P, O, C>,
): Contract<P, O, C> {
  const make = (): SourceTask<P, O, C> =>
    isSourceTaskClass(task) ? new (task as new () => SourceTask<P, O, C>)() : (task as () => SourceTask<P, O, C>)();
  let sample: SourceTask<P, O, C> | undefined;
  try {
    sample = typeof task === 'function' ? make() : undefined;
  } catch (e) {
    throw new TypeError(`describeSourceTask(${task?.name || 'task'}): making a task failed: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const taskClass: Function = isSourceTaskClass(task) ? task : (sample?.constructor ?? Object);
  const taskName = taskClass.name || 'task';
  const where = `describeSourceTask(${taskName})`;
  const fail = (message: string): never => {
    throw new TypeError(`${where}: ${message}`);
  };
  if (!sample || typeof sample.poll !== 'function' || typeof sample.offsets?.encodePartition !== 'function') {
    fail('the first argument must be a class that extends SourceTask, or a function that returns a new task');
  }

  const skipped = new Map<SourceTaskCheck, string>();
  for (const [name, reason] of Object.entries(options.skip ?? {})) {
    if (!(SOURCE_TASK_CHECKS as readonly string[]).includes(name)) {
      fail(`skip.${name} is not a check; accepted: ${SOURCE_TASK_CHECKS.join(', ')}`);
    }
    if (typeof reason !== 'string' || reason.trim() === '') {
      fail(
        `skip.${name} needs a reason: write why this task need not pass the check, e.g. skip: { ${name}: 'this source has no ...' }`,
      );
    }
    skipped.set(name as SourceTaskCheck, reason.trim());
  }
  // As the runner decides whether to call it: a class field counts, as a method does.
  if (!skipped.has('heartbeats') && hasDefaultHeartbeats(sample as SourceTask<P, O, C>)) {
    skipped.set('heartbeats', 'the task does not override produceHeartbeatRecords()');
  }
  const runs = (name: SourceTaskCheck) => !skipped.has(name);

  const config = options.config;
  if (runs('config')) {
    if (!config) fail("the config check needs options.config ({ connector, valid, invalid }), or skip: { config: 'why' }");
    if (!config?.connector && !config?.definition) fail('options.config needs a connector class or a config definition');
    if (typeof config?.valid !== 'object' || typeof config?.invalid !== 'object') {
      fail('options.config needs a valid and an invalid config, each an object of config keys');
    }
  }
  // Every check but config runs the task, except offsets and farFutureOffset when given samples.
  const sampled = (c: SourceTaskCheck) => (c === 'offsets' || c === 'farFutureOffset') && options.samples !== undefined;
  const needsTaskConfig = SOURCE_TASK_CHECKS.some((c) => c !== 'config' && !sampled(c) && runs(c));
  if (needsTaskConfig && options.taskConfig === undefined && !config?.connector) {
    fail('the checks that run the task need options.taskConfig, or options.config.connector to make one from config.valid');
  }
  if (runs('farFutureOffset') && typeof options.farFutureOffset !== 'function') {
    fail(
      "the farFutureOffset check needs options.farFutureOffset(partition) returning an offset beyond the source's end, or skip: { farFutureOffset: 'why' }",
    );
  }
  const runFor = options.runFor ?? '10s';
  let runForMs = 0;
  try {
    runForMs = toMillis(runFor);
  } catch (e) {
    fail(`options.runFor: ${(e as Error).message}`);
  }
  const ackedBeforeRestart = options.ackedBeforeRestart ?? 2;
  if (!Number.isInteger(ackedBeforeRestart) || ackedBeforeRestart < 1) {
    fail(`options.ackedBeforeRestart must be an integer >= 1, got ${ackedBeforeRestart}`);
  }
  const heartbeatIntervalMs = Number(options.connectorConfig?.['heartbeat.interval.ms'] ?? options.heartbeatIntervalMs ?? 1000);
  if (!Number.isInteger(heartbeatIntervalMs) || heartbeatIntervalMs < 1) {
    fail(`the heartbeat interval must be an integer >= 1 ms, got ${heartbeatIntervalMs}`);
  }
  if (runs('heartbeats') && heartbeatIntervalMs > runForMs) {
    fail(`the heartbeat interval (${heartbeatIntervalMs} ms) is longer than runFor (${runForMs} ms): no heartbeat would be due`);
  }

  const codec = (sample as SourceTask<P, O, C>).offsets;
  const partitionKey = (partition: P) => canonicalJson(codec.encodePartition(partition));
  const sequence = (record: SourceRecord<P, O>): string => {
    if (!options.sequence) return canonicalJson(codec.encodeOffset(record.sourceOffset));
    const s = options.sequence(record);
    return typeof s === 'string' ? s : String(s);
  };

  // Every run gets its task config as the worker's config store gives it back: through JSON.
  const taskConfig = async (): Promise<C> => {
    const made = await madeTaskConfig();
    try {
      return JSON.parse(JSON.stringify(made)) as C;
    } catch (e) {
      throw new Error(
        `${where}: the task config cannot be written as JSON, as the worker stores it: ${notPlainJson(made, 'taskConfig') ?? (e as Error).message}`,
      );
    }
  };
  const madeTaskConfig = async (): Promise<C> => {
    const given = options.taskConfig;
    if (given !== undefined) return typeof given === 'function' ? await (given as () => C | Promise<C>)() : given;
    const connectorClass = config?.connector;
    if (!connectorClass) throw new Error(`${where}: no options.taskConfig and no options.config.connector to make one`);
    const connector = new connectorClass();
    const parsed = connector.config.parse(config?.valid ?? {});
    if (!parsed.ok)
      throw new Error(`${where}: config.valid does not decode: ${parsed.problems.map((p) => p.message).join('; ')}`);
    await connector.start(parsed.value, { name: CONTRACT_CONNECTOR, logger: silentLogger, requestTaskReconfiguration: () => {} });
    const [first] = await connector.taskConfigs(1, parsed.value);
    await connector.stop();
    if (first === undefined) throw new Error(`${where}: the connector made no task config of config.valid`);
    return first as C;
  };

  const launch = async (extra: LaunchOptions<P, O> = {}) =>
    MockRuntime.start<P, O, C>(make, {
      config: await taskConfig(),
      connector: CONTRACT_CONNECTOR,
      connectorConfig: { ...options.connectorConfig, 'heartbeat.interval.ms': 0, ...extra.connectorConfig },
      workerConfig: options.workerConfig,
      committedOffsets: extra.committedOffsets,
      holdAcks: extra.holdAcks,
      logger: extra.logger,
    });

  let probed: Promise<Probe<P, O>> | undefined;
  const probe = () => {
    probed ??= (async () => {
      const run = await launch();
      try {
        const startedAt = run.clock.now();
        await run.advanceBy(runFor);
        assertNotFailed(run, `during a first run of ${String(runFor)}`);
        return { records: run.dataRecords, startedAt };
      } finally {
        await run.stop();
      }
    })();
    return probed;
  };

  return {
    task,
    taskClass,
    taskName,
    options,
    skipped,
    runFor,
    runForMs,
    ackedBeforeRestart,
    heartbeatIntervalMs,
    hasHeartbeats: !hasDefaultHeartbeats(sample as SourceTask<P, O, C>),
    codec,
    partitionKey,
    sequence,
    launch,
    probe,
  };
}

/** Throws, with the task's trace, when the run has FAILED. */
export function assertNotFailed(run: MockRuntime<any, any, any>, when: string): void {
  const status = run.status;
  if (status.state === 'FAILED') throw new Error(`The task FAILED ${when}:\n${status.trace}`);
}

/**
 * Where `value` first holds something a JSON round trip would not give back as it is (a class
 * instance, a function, NaN, a bigint, undefined in an array...), or undefined when nothing.
 */
export function notPlainJson(value: unknown, path: string, depth = 0): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} is ${value} (JSON gives back null)`;
  if (typeof value !== 'object') return `${path} is ${value === undefined ? 'undefined' : `a ${typeof value}`} (JSON drops it)`;
  if (depth > 64) return `${path} nests deeper than 64 levels (a cycle?)`;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = notPlainJson(item, `${path}[${i}]`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'unknown';
    let back: string;
    try {
      back = JSON.stringify(value);
    } catch {
      back = 'or nothing';
    }
    return `${path} is an object of class ${name} (JSON gives back ${back})`;
  }
  for (const [key, item] of Object.entries(value)) {
    const found = item === undefined ? undefined : notPlainJson(item, `${path}.${key}`, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** A logger that keeps the `event` field of every line in `events`. */
export function eventLogger(events: string[]): Logger {
  const record = (fields: object) => {
    const event = (fields as { event?: unknown }).event;
    if (typeof event === 'string') events.push(event);
  };
  const logger: Logger = { debug: record, info: record, warn: record, error: record, child: () => logger };
  return logger;
}

/** `items` grouped by `key`, each group in the order given. */
export function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/** The first item of each `key`, in the order given. */
export function dedupe<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Map<string, T>();
  for (const item of items) if (!seen.has(key(item))) seen.set(key(item), item);
  return [...seen.values()];
}
