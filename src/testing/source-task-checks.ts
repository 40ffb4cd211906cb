import { canonicalJson } from '../api/canonical-json.js';
import { silentLogger } from '../api/logger.js';
import type { SourceConnectorClass } from '../api/source-connector.js';
import { resolveTaskSettings } from '../runtime/task-settings.js';
import { checkRestart, checkRestartWithHeartbeats } from './restart-checks.js';
import {
  assertNotFailed,
  CONTRACT_CONNECTOR,
  type Contract,
  dedupe,
  eventLogger,
  groupBy,
  HEARTBEAT_TOPIC,
  notPlainJson,
  resolveContract,
  type SourceTaskCheck,
  type SourceTaskConfigContract,
  type SourceTaskContractOptions,
  type SourceTaskUnderTest,
} from './source-task-contract.js';
import { vitestApi } from './vitest-api.js';

export { SOURCE_TASK_CHECKS, type SourceTaskCheck } from './source-task-contract.js';

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
