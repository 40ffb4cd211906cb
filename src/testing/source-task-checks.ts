import { canonicalJson } from '../api/canonical-json.js';
import { type Logger, silentLogger } from '../api/logger.js';
import type { OffsetCodec } from '../api/offset-codec.js';
import type { SourceConnectorClass } from '../api/source-connector.js';
import type { OffsetUpdate, SourceRecord } from '../api/source-record.js';
import { hasDefaultHeartbeats, isSourceTaskClass, type SourceTask } from '../api/source-task.js';
import { resolveTaskSettings } from '../runtime/task-settings.js';
import type { SourceTaskConfigContract, SourceTaskContractOptions, SourceTaskUnderTest } from './describe-source-task.js';
import { type CapturedRecord, type CapturedRecordView, MockRuntime } from './mock-runtime.js';
import { type Duration, toMillis } from './virtual-clock.js';
import { vitestApi } from './vitest-api.js';

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

const CONTRACT_CONNECTOR = 'contract-test';
const HEARTBEAT_TOPIC = 'contract.heartbeats';
/** Real time a stop may take before the suite calls it stuck (virtual time is what the check measures). */
const STOP_REAL_TIMEOUT_MS = 10_000;
/** Log events of a task runner that mean the stop needed its grace period and more. */
const STOP_TIMEOUT_EVENTS = new Set(['task.stop.round.timeout', 'task.stop.inflight.timeout']);

/** One generated check: its name (the `skip` key), its test title, and either a skip reason or its body. */
export interface ContractCheck {
  readonly name: SourceTaskCheck;
  readonly title: string;
  /** Why it does not run, when skipped. */
  readonly skipped: string | undefined;
  /** Runs the check; rejects with an assertion error saying what is wrong. */
  run(): Promise<void>;
}

/**
 * The checks of the source task contract for one task, validated and ready to run (what
 * `describeSourceTask` turns into tests), and the task's name. Throws a TypeError naming the option when the options
 * are incomplete (a check without what it needs, a skip without a reason, an unknown skip key).
 */
export function sourceTaskChecks<P, O, C>(
  task: SourceTaskUnderTest<P, O, C>,
  options: SourceTaskContractOptions<P, O, C>,
): { taskName: string; checks: ContractCheck[] } {
  const contract = resolveContract(task, options);
  const check = (name: SourceTaskCheck, title: string, run: () => Promise<void>): ContractCheck => ({
    name,
    title,
    skipped: contract.skipped.get(name),
    run,
  });
  const checks = [
    check('config', 'decodes a valid config and rejects an invalid one with a problem naming each bad key', () =>
      checkConfigDecodes(contract),
    ),
    ...(options.config?.connector
      ? [
          check('config', 'splits a valid config into at most tasks.max task configs that survive JSON', () =>
            checkTaskConfigs(contract),
          ),
        ]
      : []),
    check('offsets', 'round-trips its source partitions and offsets through its codec as canonical JSON', () =>
      checkOffsets(contract),
    ),
    check('restartAfterCrash', 'resumes after a crash exactly after its committed offsets: no gap, no repeat before them', () =>
      checkRestart(contract, true),
    ),
    check(
      'restartAfterStop',
      'resumes after a graceful stop exactly after its committed offsets: no gap, no repeat before them',
      () => checkRestart(contract, false),
    ),
    check(
      'restartWithHeartbeats',
      'resumes after a crash with heartbeats and offset updates committed: the record after the last one acknowledged comes next',
      () => checkRestartWithHeartbeats(contract),
    ),
    check('farFutureOffset', 'yields nothing when started from a far-future offset', () => checkFarFuture(contract)),
    check(
      'heartbeats',
      'sends at most one heartbeat per partition per heartbeat.interval.ms, with offsets that decode and never go back',
      () => checkHeartbeats(contract),
    ),
    check('stop', 'stops within task.shutdown.graceful.timeout.ms with its poll round finished', () => checkStop(contract)),
  ];
  return { taskName: contract.taskName, checks };
}

/** The options, validated and with defaults, plus the helpers every check shares. */
interface Contract<P, O, C> {
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
interface Probe<P, O> {
  /** Its data records, in the order they were acknowledged (the order the task emitted them). */
  readonly records: ReadonlyArray<CapturedRecord<P, O>>;
  /** Virtual time when the task had started (ms since the epoch), to read `ackedAt` against. */
  readonly startedAt: number;
}

interface LaunchOptions<P, O> {
  readonly connectorConfig?: Readonly<Record<string, unknown>>;
  readonly committedOffsets?: ReadonlyArray<OffsetUpdate<P, O>>;
  readonly holdAcks?: (record: CapturedRecordView<P, O>) => boolean;
  readonly logger?: Logger;
}

function resolveContract<P, O, C>(
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

function assertNotFailed(run: MockRuntime<any, any, any>, when: string): void {
  const status = run.status;
  if (status.state === 'FAILED') throw new Error(`The task FAILED ${when}:\n${status.trace}`);
}

async function checkConfigDecodes<P, O, C>(contract: Contract<P, O, C>): Promise<void> {
  const config = contract.options.config as SourceTaskConfigContract;
  const definition = config.definition ?? new (config.connector as SourceConnectorClass)().config;
  const valid = definition.parse(config.valid);
  vitestApi()
    .expect(valid.ok ? [] : valid.problems.map((p) => p.message), 'config.valid must decode, but has problems')
    .toEqual([]);
  const invalid = definition.parse(config.invalid);
  vitestApi().expect(invalid.ok, 'config.invalid must not decode').toBe(false);
  if (invalid.ok) return;
  vitestApi().expect(invalid.problems.length, 'an invalid config must come with at least one problem').toBeGreaterThan(0);
  for (const problem of invalid.problems) {
    vitestApi()
      .expect(problem.message.includes(problem.key), `the problem "${problem.message}" must name its key "${problem.key}"`)
      .toBe(true);
  }
  if (config.invalidKeys) {
    const keys = invalid.problems.map((p) => p.key);
    vitestApi()
      .expect(keys, `the problems of config.invalid must name ${config.invalidKeys.join(', ')}`)
      .toEqual(vitestApi().expect.arrayContaining([...config.invalidKeys]));
  }
}

async function checkTaskConfigs<P, O, C>(contract: Contract<P, O, C>): Promise<void> {
  const config = contract.options.config as SourceTaskConfigContract;
  const connectorClass = config.connector as SourceConnectorClass;
  const connector = new connectorClass();
  vitestApi()
    .expect(
      contract.taskClass === connector.taskClass || contract.taskClass.prototype instanceof connector.taskClass,
      `${connectorClass.name}.taskClass must be ${contract.taskName} (or a class it extends), got ${connector.taskClass?.name}`,
    )
    .toBe(true);
  const parsed = connector.config.parse(config.valid);
  if (!parsed.ok) throw new Error(`config.valid does not decode: ${parsed.problems.map((p) => p.message).join('; ')}`);
  await connector.start(parsed.value, { name: CONTRACT_CONNECTOR, logger: silentLogger, requestTaskReconfiguration: () => {} });
  try {
    for (const maxTasks of [1, 3]) {
      const taskConfigs = await connector.taskConfigs(maxTasks, parsed.value);
      vitestApi()
        .expect(taskConfigs.length, `taskConfigs(${maxTasks}) must give 1 to ${maxTasks} task configs`)
        .toBeGreaterThanOrEqual(1);
      vitestApi()
        .expect(taskConfigs.length, `taskConfigs(${maxTasks}) must give 1 to ${maxTasks} task configs`)
        .toBeLessThanOrEqual(maxTasks);
      for (const [i, taskConfig] of taskConfigs.entries()) {
        // Not toEqual: it takes a class instance for the plain object JSON gives back.
        const problem = notPlainJson(taskConfig, `taskConfigs(${maxTasks})[${i}]`);
        vitestApi()
          .expect(
            problem,
            `a task config must be plain JSON: it is stored and sent as JSON (distributed mode), and the task gets what JSON gives back, but ${problem}`,
          )
          .toBeUndefined();
      }
    }
  } finally {
    await connector.stop();
  }
}

async function checkOffsets<P, O, C>(contract: Contract<P, O, C>): Promise<void> {
  const { codec } = contract;
  const samples =
    contract.options.samples ??
    dedupe(
      (await contract.probe()).records.map((r) => ({ partition: r.sourcePartition, offset: r.sourceOffset })),
      (s) => canonicalJson([codec.encodePartition(s.partition), codec.encodeOffset(s.offset)]),
    );
  if (samples.length === 0) {
    throw new Error(
      `The task produced no record in ${String(contract.runFor)}, so there is nothing to round-trip: give options.samples`,
    );
  }
  for (const { partition, offset } of samples) {
    const p = codec.encodePartition(partition);
    const o = codec.encodeOffset(offset);
    vitestApi().expect(JSON.stringify(p), 'an encoded partition must be canonical JSON (keys sorted)').toBe(canonicalJson(p));
    vitestApi().expect(JSON.stringify(o), 'an encoded offset must be canonical JSON (keys sorted)').toBe(canonicalJson(o));
    // Exactly, as PATCH /offsets and POST /connectors decode what GET /offsets gave.
    const decodedPartition = codec.decodePartition(JSON.parse(JSON.stringify(p)), { exact: true });
    const decodedOffset = codec.decodeOffset(JSON.parse(JSON.stringify(o)), { exact: true });
    const problems = (decoded: { ok: true } | { ok: false; problems: string[] }) => (decoded.ok ? [] : decoded.problems);
    vitestApi()
      .expect(
        problems(decodedPartition),
        `partition ${JSON.stringify(p)} must decode exactly, as PATCH /offsets decodes it: ${problems(decodedPartition).join('; ')}`,
      )
      .toEqual([]);
    vitestApi()
      .expect(
        problems(decodedOffset),
        `offset ${JSON.stringify(o)} must decode exactly, as PATCH /offsets decodes it: ${problems(decodedOffset).join('; ')}`,
      )
      .toEqual([]);
    if (decodedPartition.ok)
      vitestApi().expect(decodedPartition.value, 'a partition must decode to what was encoded').toEqual(partition);
    if (decodedOffset.ok) vitestApi().expect(decodedOffset.value, 'an offset must decode to what was encoded').toEqual(offset);
  }
  const garbage = codec.decodeOffset('not an offset');
  vitestApi().expect(garbage.ok, 'a stored offset that is not an object must not decode').toBe(false);
  if (!garbage.ok) {
    vitestApi()
      .expect(
        garbage.problems.every((line) => line.startsWith('offset')),
        `each problem must start with the path of what is wrong, got ${JSON.stringify(garbage.problems)}`,
      )
      .toBe(true);
  }
}

async function checkRestart<P, O, C>(contract: Contract<P, O, C>, crash: boolean): Promise<void> {
  const { partitionKey, sequence, ackedBeforeRestart: acked } = contract;
  const seen = new Map<string, number>();
  let crashed: SourceTask<P, O, C> | undefined;
  const run = await contract.launch({
    // Acknowledge the first records of each partition and hold back the rest, so the commit
    // point falls in the middle of what the task produced.
    holdAcks: (record) => {
      if (record.heartbeat) return false;
      const key = partitionKey(record.sourcePartition);
      const n = seen.get(key) ?? 0;
      seen.set(key, n + 1);
      return n >= acked;
    },
  });
  try {
    await run.advanceBy(contract.runFor);
    assertNotFailed(run, 'before the restart');
    const produced = groupBy(
      run.sender.sent.filter((out) => !out.heartbeat).map((out) => out.source as SourceRecord<P, O>),
      (r) => partitionKey(r.sourcePartition),
    );
    if (![...produced.values()].some((records) => records.length > acked)) {
      const counts = [...produced.values()].map((r) => r.length);
      throw new Error(
        `In ${String(contract.runFor)} the task produced ${counts.length === 0 ? 'no records' : `${counts.join(', ')} records per source partition`}; ` +
          `this check acknowledges the first ${acked} of each partition and needs more after them: ` +
          'give a task config that produces more records, a longer runFor or a smaller ackedBeforeRestart',
      );
    }
    vitestApi()
      .expect(await run.flush(), 'the offset flush before the restart must succeed')
      .toBe(true);
    const before = run.captured.length;
    if (crash) crashed = run.task;
    await run.restart(crash ? { crash: true } : {});
    assertNotFailed(run, 'when started again after the restart');
    await run.advanceBy(contract.runFor);
    assertNotFailed(run, 'after the restart');
    const resumed = groupBy(
      run.captured.slice(before).filter((r) => !r.heartbeat),
      (r) => partitionKey(r.sourcePartition),
    );
    for (const [key, records] of produced) {
      const committed = records.slice(0, acked).map(sequence);
      const unacked = records.slice(acked).map(sequence);
      const again = (resumed.get(key) ?? []).map(sequence);
      const last = committed.at(-1);
      vitestApi()
        .expect(
          again.filter((s) => committed.includes(s)),
          `after the restart, source partition ${key} repeated records at or before its committed offset (${last})`,
        )
        .toEqual([]);
      if (unacked.length === 0) continue;
      vitestApi()
        .expect(
          again.length,
          `after the restart, source partition ${key} produced nothing, though its records after the committed offset (${last}) were never acknowledged`,
        )
        .toBeGreaterThan(0);
      // All of them: a task that re-emits the first one and then stalls has lost the rest.
      const slow =
        again.length < unacked.length
          ? `; it produced only ${again.length} in ${String(contract.runFor)}: if the source is slow rather than stalled, give a longer runFor`
          : '';
      vitestApi()
        .expect(
          again.slice(0, unacked.length),
          `after the restart, source partition ${key} must go on with the first record after its committed offset (${last}), ` +
            `then every one of the ${unacked.length} records it had produced after it that were never acknowledged, in order${slow}`,
        )
        .toEqual(unacked);
    }
  } finally {
    await run.stop();
    // Release what the end of a crashed process would have (files, sockets), after the check.
    await crashed?.stop();
  }
}

/**
 * Crashes a run in the middle of its data with heartbeats on (for a task that has them), once
 * heartbeats, KIP-910 offset updates and flushes have had their say, then requires each source
 * partition to go on with the record that followed, in a plain run, the last one acknowledged
 * before the crash. A heartbeat or updateOffsets() offset ahead of records not yet polled
 * skips them (lost); one behind the data repeats records. Runs twice for a task with
 * heartbeats: with nothing held back (offset updates apply), and with the data after a
 * heartbeat held back, so that the heartbeat's offset is what the crash leaves committed.
 */
async function checkRestartWithHeartbeats<P, O, C>(contract: Contract<P, O, C>): Promise<void> {
  const probe = await contract.probe();
  if (probe.records.length === 0) {
    throw new Error(
      `In ${String(contract.runFor)} the task produced no records, so there is no data to crash in the middle of: give a task config that produces some, or a longer runFor`,
    );
  }
  await crashMidStream(contract, probe, false);
  if (contract.hasHeartbeats) await crashMidStream(contract, probe, true);
}

async function crashMidStream<P, O, C>(
  contract: Contract<P, O, C>,
  probe: Probe<P, O>,
  holdAfterHeartbeat: boolean,
): Promise<void> {
  const { partitionKey, sequence, hasHeartbeats, heartbeatIntervalMs: interval } = contract;
  const order = new Map(
    [...groupBy(probe.records, (r) => partitionKey(r.sourcePartition))].map(([key, records]) => [key, records.map(sequence)]),
  );
  // From the time half of a plain run's records were acknowledged. Holding after a heartbeat,
  // the run goes on (one heartbeat interval at most) until a heartbeat comes while its
  // partition has data still to come; the data after it is held back, as a heartbeat due
  // with a record would otherwise always see the record's offset committed after its own.
  const times = probe.records.map((r) => r.ackedAt - probe.startedAt).sort((a, b) => a - b);
  const middle = Math.min(contract.runForMs, Math.max(1, times[Math.floor((times.length - 1) / 2)] ?? 0));
  let armed = false;
  const sent = new Map<string, number>();
  const held = new Set<string>();
  const run = await contract.launch({
    connectorConfig: hasHeartbeats ? { 'heartbeat.interval.ms': interval, 'heartbeat.topic': HEARTBEAT_TOPIC } : {},
    holdAcks: holdAfterHeartbeat
      ? (record) => {
          const key = partitionKey(record.sourcePartition);
          if (!record.heartbeat) {
            sent.set(key, (sent.get(key) ?? 0) + 1);
            return held.has(key);
          }
          if (armed && (sent.get(key) ?? 0) < (order.get(key)?.length ?? 0)) held.add(key);
          return false;
        }
      : undefined,
  });
  const how = !hasHeartbeats
    ? 'nothing held back'
    : holdAfterHeartbeat
      ? 'heartbeats on, the data after a heartbeat held back'
      : 'heartbeats on, nothing held back';
  const lastData = (key: string) => {
    const records = run.dataRecords.filter((r) => partitionKey(r.sourcePartition) === key);
    return records.length === 0 ? undefined : sequence(records[records.length - 1] as CapturedRecord<P, O>);
  };
  let crashed: SourceTask<P, O, C> | undefined;
  try {
    const startedAt = run.clock.now();
    await run.clock.advanceTo(startedAt + middle);
    armed = true;
    if (holdAfterHeartbeat) {
      const deadline = startedAt + Math.min(contract.runForMs, middle + interval);
      for (let next = run.clock.nextTimerAt; held.size === 0 && next !== undefined && next <= deadline; ) {
        await run.clock.advanceTo(next);
        next = run.clock.nextTimerAt;
      }
    }
    const crashAt = run.clock.now() - startedAt;
    const when = `a crash ${crashAt} ms in (${how})`;
    assertNotFailed(run, `before ${when}`);
    // What is acknowledged when the flush starts is what it commits.
    const acked = new Map([...order.keys()].map((key) => [key, lastData(key)]));
    vitestApi()
      .expect(await run.flush(), `the offset flush before ${when} must succeed`)
      .toBe(true);
    const before = run.captured.length;
    crashed = run.task;
    await run.restart({ crash: true });
    assertNotFailed(run, `when started again after ${when}`);
    await run.advanceBy(contract.runFor);
    assertNotFailed(run, `after ${when}`);
    const resumed = groupBy(
      run.captured.slice(before).filter((r) => !r.heartbeat),
      (r) => partitionKey(r.sourcePartition),
    );
    for (const [key, seqs] of order) {
      const last = acked.get(key);
      const lastAt = last === undefined ? -1 : seqs.indexOf(last);
      if (last !== undefined && lastAt < 0) {
        throw new Error(
          `Source partition ${key}: record ${last}, acknowledged before ${when}, is not among the records of a plain run of ${String(contract.runFor)}: ` +
            'this check needs the task to produce the same records in the same order in both; ' +
            "give a sequence option that names records alike in both runs, or skip: { restartWithHeartbeats: 'why' }",
        );
      }
      const again = (resumed.get(key) ?? []).map(sequence);
      vitestApi()
        .expect(
          again.filter((s) => {
            const i = seqs.indexOf(s);
            return i >= 0 && i <= lastAt;
          }),
          `after ${when}, source partition ${key} repeated records at or before the last one acknowledged and flushed (${last}): ` +
            'its committed offset went back behind its data (a heartbeat or updateOffsets() offset older than the records before it?)',
        )
        .toEqual([]);
      const next = seqs[lastAt + 1];
      if (next === undefined) continue;
      const after = last === undefined ? 'with no record acknowledged' : `after its last record acknowledged (${last})`;
      vitestApi()
        .expect(
          again[0],
          `after ${when}, source partition ${key} ${after} must go on with ${next}, the next record of a plain run; ` +
            `it produced ${again.length === 0 ? 'nothing' : `${again[0]} first`} in ${String(contract.runFor)}. ` +
            'A heartbeat or updateOffsets() offset ahead of records not yet polled loses them; if the source is only slow, give a longer runFor',
        )
        .toBe(next);
    }
  } finally {
    await run.stop();
    // Release what the end of a crashed process would have (files, sockets), after the check.
    await crashed?.stop();
  }
}

async function checkFarFuture<P, O, C>(contract: Contract<P, O, C>): Promise<void> {
  const farFutureOffset = contract.options.farFutureOffset as (partition: P) => O;
  const partitions = dedupe(
    contract.options.samples?.map((s) => s.partition) ?? (await contract.probe()).records.map((r) => r.sourcePartition),
    contract.partitionKey,
  );
  if (partitions.length === 0) {
    throw new Error(
      `The task produced no record in ${String(contract.runFor)}, so it has no partition to start far ahead: give options.samples`,
    );
  }
  const run = await contract.launch({
    committedOffsets: partitions.map((partition) => ({ partition, offset: farFutureOffset(partition) })),
  });
  try {
    await run.advanceBy(contract.runFor);
    // A task that fails on such an offset yields nothing too: failing is no way to pass.
    assertNotFailed(run, 'when started from farFutureOffset(partition): it must start and wait for records past it');
    const keys = new Set(partitions.map(contract.partitionKey));
    const yielded = run.dataRecords
      .filter((r) => keys.has(contract.partitionKey(r.sourcePartition)))
      .map((r) => `${contract.partitionKey(r.sourcePartition)} ${canonicalJson(contract.codec.encodeOffset(r.sourceOffset))}`);
    vitestApi()
      .expect(yielded, 'started from farFutureOffset(partition), the task must yield no record of that partition')
      .toEqual([]);
  } finally {
    await run.stop();
  }
}

async function checkHeartbeats<P, O, C>(contract: Contract<P, O, C>): Promise<void> {
  const interval = contract.heartbeatIntervalMs;
  const run = await contract.launch({
    connectorConfig: { 'heartbeat.interval.ms': interval, 'heartbeat.topic': HEARTBEAT_TOPIC },
  });
  try {
    await run.advanceBy(contract.runFor);
    assertNotFailed(run, 'with heartbeats on');
    const beats = run.heartbeats;
    vitestApi()
      .expect(
        beats.length,
        `no heartbeat record in ${String(contract.runFor)} with heartbeat.interval.ms=${interval}; if this task has none, skip: { heartbeats: 'why' }`,
      )
      .toBeGreaterThan(0);
    const ticks = Math.floor(contract.runForMs / interval);
    for (const [key, records] of groupBy(beats, (r) => contract.partitionKey(r.sourcePartition))) {
      vitestApi()
        .expect(
          records.length,
          `source partition ${key} got ${records.length} heartbeats in ${ticks} intervals: at most one per partition per call is expected`,
        )
        .toBeLessThanOrEqual(ticks);
    }
    for (const beat of beats) {
      vitestApi().expect(beat.topic, 'a heartbeat goes to the heartbeat topic').toBe(HEARTBEAT_TOPIC);
      // Exactly, as PATCH /offsets decodes what GET /offsets gave.
      const p = contract.codec.decodePartition(JSON.parse(JSON.stringify(contract.codec.encodePartition(beat.sourcePartition))), {
        exact: true,
      });
      const o = contract.codec.decodeOffset(JSON.parse(JSON.stringify(contract.codec.encodeOffset(beat.sourceOffset))), {
        exact: true,
      });
      const pp = p.ok ? [] : p.problems;
      const op = o.ok ? [] : o.problems;
      vitestApi()
        .expect(pp, `the partition of a heartbeat must decode exactly, as PATCH /offsets decodes it: ${pp.join('; ')}`)
        .toEqual([]);
      vitestApi()
        .expect(op, `the offset of a heartbeat must decode exactly, as PATCH /offsets decodes it: ${op.join('; ')}`)
        .toEqual([]);
      if (o.ok)
        vitestApi().expect(o.value, 'the offset of a heartbeat must decode to what it carried').toEqual(beat.sourceOffset);
    }
    // A heartbeat commits its offset as if it were the partition's latest record: carrying the
    // offset of a data record earlier than the data before it moves the committed offset back.
    // Offsets have no order the suite knows, so only those equal to a data record's are placed.
    const encoded = (offset: O) => canonicalJson(contract.codec.encodeOffset(offset));
    const backwards: string[] = [];
    for (const [key, records] of groupBy(run.captured, (r) => contract.partitionKey(r.sourcePartition))) {
      const data = records.filter((r) => !r.heartbeat).map((r) => encoded(r.sourceOffset));
      const lastAt = new Map(data.map((offset, i) => [offset, i]));
      let latest = -1;
      for (const record of records) {
        if (!record.heartbeat) {
          latest++;
          continue;
        }
        const offset = encoded(record.sourceOffset);
        const at = lastAt.get(offset);
        if (at !== undefined && at < latest) backwards.push(`${key}: heartbeat ${offset} after data up to ${data[latest]}`);
      }
    }
    vitestApi()
      .expect(
        backwards,
        `a heartbeat must not carry the offset of a data record older than the data sent before it: committed, it moves the offset back and a restart repeats records (${backwards.slice(0, 3).join('; ')})`,
      )
      .toEqual([]);
    vitestApi()
      .expect(await run.flush(), 'the offsets of heartbeats must flush')
      .toBe(true);
    const stored = await run.store.read(run.connector);
    vitestApi()
      .expect((await run.committedOffsets()).length, 'every committed offset must decode')
      .toBe(stored.length);
  } finally {
    await run.stop();
  }
}

async function checkStop<P, O, C>(contract: Contract<P, O, C>): Promise<void> {
  const events: string[] = [];
  const run = await contract.launch({ logger: eventLogger(events) });
  await run.advanceBy(Math.floor(contract.runForMs / 2));
  assertNotFailed(run, 'before the stop');
  const grace = resolveTaskSettings(
    contract.options.workerConfig ?? {},
    contract.options.connectorConfig ?? {},
  ).shutdownTimeoutMs;
  const startedAt = run.clock.now();
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `stop did not finish within ${STOP_REAL_TIMEOUT_MS / 1000} s of real time: poll() or stop() waits on something that is not context.clock, or on a promise that never settles`,
          ),
        ),
      STOP_REAL_TIMEOUT_MS,
    );
  });
  try {
    await Promise.race([run.stop(), stuck]);
  } finally {
    clearTimeout(timer);
  }
  const took = run.clock.now() - startedAt;
  vitestApi()
    .expect(
      events.filter((e) => STOP_TIMEOUT_EVENTS.has(e)),
      `the poll round or the in-flight records outlasted task.shutdown.graceful.timeout.ms (${grace} ms): end poll() rounds promptly`,
    )
    .toEqual([]);
  // Virtual time runs out the grace period of a stop() that never returns at once, so its
  // duration alone passes such a task: the runner's warning is what tells.
  vitestApi()
    .expect(
      events.filter((e) => e === 'task.stop.failed'),
      `stop() did not return within task.shutdown.graceful.timeout.ms (${grace} ms), or threw: it must release the source and return (a stop() waiting on something that never comes leaks it)`,
    )
    .toEqual([]);
  vitestApi()
    .expect(took, `stopping took ${took} ms of virtual time, more than task.shutdown.graceful.timeout.ms (${grace} ms)`)
    .toBeLessThanOrEqual(grace);
  vitestApi().expect(run.status.state, 'a stopped task must end STOPPED').toBe('STOPPED');
  // The runtime cancels its own timers: one left on the task's clock belongs to a source that
  // stop() left running (a stream still delivering, a poller rescheduling itself).
  const left = run.clock.describePending();
  vitestApi()
    .expect(
      left,
      `after stop, ${left.length} timer(s) of context.clock are still scheduled (${left.slice(0, 3).join(', ')}): stop() must release the source (close its streams, unsubscribe what it scheduled)`,
    )
    .toEqual([]);
}

/**
 * Where `value` first holds something a JSON round trip would not give back as it is (a class
 * instance, a function, NaN, a bigint, undefined in an array...), or undefined when nothing.
 */
function notPlainJson(value: unknown, path: string, depth = 0): string | undefined {
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

function eventLogger(events: string[]): Logger {
  const record = (fields: object) => {
    const event = (fields as { event?: unknown }).event;
    if (typeof event === 'string') events.push(event);
  };
  const logger: Logger = { debug: record, info: record, warn: record, error: record, child: () => logger };
  return logger;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

function dedupe<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Map<string, T>();
  for (const item of items) if (!seen.has(key(item))) seen.set(key(item), item);
  return [...seen.values()];
}
