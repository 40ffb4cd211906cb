/**
 * One measured run of one contender, in its own process, against a topic made for it:
 *
 * 1. a fresh topic (1 partition) is created; the clock starts just before the spawn;
 * 2. the topic's end offset is polled every 50 ms: the first poll that sees a record gives
 *    "first record", the first that sees all N gives "all in topic";
 * 3. a worker (Kafka Connect, Tributary) is then sent SIGTERM: its graceful stop waits for
 *    in-flight records and commits the final offsets (both log and do this on SIGTERM), then the
 *    process exits; a one-shot producer exits by itself once its last batch is acknowledged;
 * 4. wall time = spawn → process exit, so it includes start-up, the detection delay (≤ 50 ms,
 *    the same for every side), the final offset commit and shutdown;
 * 5. afterwards the topic must hold exactly N records and a worker's offsets file must name the
 *    input file's size as the committed position; otherwise the run is marked failed;
 * 6. the steady rate is records/s between the polls at which 10% and 90% of the records were in
 *    the topic (bench/lib/steady.ts), so neither start-up nor the final drain is in it.
 *
 * A time-bounded run (`stopAfterS`, the series) is stopped that long after its first record
 * instead; its committed offsets must then cover no more than the topic holds (fixed-size lines:
 * the committed byte position is a line end at most the record count × the line length; records
 * acknowledged after the final commit are counted as uncommitted), and its steady window is 10%
 * to 90% of what was in the topic when the stop was sent.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Admin, Kafka } from 'kafkajs';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { TopicReader } from '../../src/kafka/topic-reader.js';
import { freePort } from '../../test/kafka/broker.js';
import type { Contender, ContenderId, RunContext } from '../contenders/contender.js';
import { inputLine } from './input-file.js';
import { startMetered } from './metered-process.js';
import { cpuTimes, loadAverage, type ThreadCpu } from './proc.js';
import { steadyRate } from './steady.js';
import { TopicProgress } from './topic-progress.js';

/** The figures of one run. Times in seconds from the spawn. */
export interface RunResult {
  readonly contender: ContenderId;
  readonly label: string;
  readonly run: number;
  readonly ok: boolean;
  readonly problems: readonly string[];
  /** Records in the topic after the run. */
  readonly records: number;
  readonly wallS: number;
  readonly firstRecordS: number | undefined;
  readonly allInTopicS: number | undefined;
  /** All in topic → process exit (a worker's graceful stop with its final offset commit). */
  readonly stopS: number | undefined;
  /** Records written / wall time. */
  readonly recordsPerSec: number;
  /** Records/s between 10% and 90% of the records the run wrote (bench/lib/steady.ts): the rate once running. */
  readonly steadyPerSec: number | undefined;
  /** Where that window began and ended, seconds from the spawn. */
  readonly steadyFromS: number | undefined;
  readonly steadyToS: number | undefined;
  /** N / (all in topic − first record): the previous "steady" figure, which includes the final drain. */
  readonly firstToAllPerSec: number | undefined;
  /** For a run stopped after a fixed time: when the harness sent SIGTERM, seconds from the spawn. */
  readonly stoppedAfterS: number | undefined;
  readonly cpuS: number;
  /** The process's CPU by thread: main, busiest other (the kafkajs producer thread), rest (sampled every 100 ms). */
  readonly threadCpu: ThreadCpu;
  readonly peakRssMiB: number;
  /** Resident set of the process tree over the run: ms since the spawn, MiB. */
  readonly rssSamples: ReadonlyArray<readonly [number, number]>;
  /** CPU seconds the broker spent during the run (when the harness started it). */
  readonly brokerCpuS: number | undefined;
  /** Committed byte position (workers), and the input file's size it should equal. */
  readonly committedPosition: number | undefined;
  /** A time-bounded run: records in the topic that the final commit did not cover (acknowledged after it). */
  readonly uncommittedRecords: number | undefined;
  /** 1-minute load average just before the run. */
  readonly loadBefore: number;
  readonly exit: string;
  readonly logFile: string;
}

/** What every run shares. */
export interface RunEnvironment {
  readonly kafka: Kafka;
  readonly bootstrap: string;
  readonly brokerPid: number | undefined;
  readonly inputFile: string;
  readonly inputBytes: number;
  readonly records: number;
  readonly lineBytes: number;
  readonly verify: boolean;
  /** Per-run directories go under this one. */
  readonly runsDir: string;
  /** Partitions of the topic each run gets (default 1). */
  readonly partitions?: number;
  /** How many connectors read the input file side by side (default 1): the run writes `records × copies`. */
  readonly copies?: number;
  /**
   * Stop the run this many seconds after its first record is in the topic (SIGTERM; a worker
   * stops gracefully and commits, a raw producer sends what it has read and exits), or when the
   * input is done, whichever comes first. Undefined: the run ends with the input.
   */
  readonly stopAfterS?: number;
}

/**
 * Admin clients for one run. kafkajs keeps asking for the metadata of every topic a client has
 * touched, and fails once one of them is deleted, so each run gets fresh ones.
 */
export async function runAdmins(kafka: Kafka): Promise<{ admin: Admin; topics: TopicAdmin; close(): Promise<void> }> {
  const admin = kafka.admin();
  await admin.connect();
  const topics = new TopicAdmin(kafka);
  return {
    admin,
    topics,
    close: async () => {
      await Promise.allSettled([admin.disconnect(), topics.close()]);
    },
  };
}

export async function measureRun(contender: Contender, run: number, env: RunEnvironment): Promise<RunResult> {
  const admins = await runAdmins(env.kafka);
  try {
    return await measure(contender, run, env, admins.admin, admins.topics);
  } finally {
    await admins.close();
  }
}

async function measure(
  contender: Contender,
  run: number,
  env: RunEnvironment,
  admin: Admin,
  topics: TopicAdmin,
): Promise<RunResult> {
  const partitions = env.partitions ?? 1;
  const copies = env.copies ?? 1;
  const expected = env.records * copies;
  const timeBounded = env.stopAfterS !== undefined;
  const topic = `bench-${contender.id}-${run}-${Date.now().toString(36)}`;
  await createTopic(topics, topic, partitions);
  const dir = join(env.runsDir, `${contender.id}-${run}-${Date.now().toString(36)}`);
  await mkdir(dir, { recursive: true });
  const context: RunContext = {
    bootstrap: env.bootstrap,
    topic,
    inputFile: env.inputFile,
    records: env.records,
    lineBytes: env.lineBytes,
    dir,
    restPort: await freePort(),
    partitions,
    copies,
  };
  const launch = await contender.launch(context);
  const logFile = join(dir, 'process.log');
  const problems: string[] = [];
  const loadBefore = loadAverage();
  const brokerBefore = env.brokerPid === undefined ? undefined : cpuTimes(env.brokerPid);

  const proc = startMetered(launch.command, launch.args, { cwd: dir, env: launch.env, logFile });
  const progress = new TopicProgress(admin, topic, expected);
  progress.start();
  const timeoutMs = timeBounded ? 120_000 + (env.stopAfterS as number) * 1000 : 60_000 + expected / 5;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((r) => {
    timer = setTimeout(() => r('timeout'), timeoutMs);
  });
  let outcome: Awaited<typeof proc.outcome>;
  /** Records in the topic when the harness sent the stop (time-bounded runs). */
  let atStop: number | undefined;
  let stopSentAt: number | undefined;
  if (timeBounded) {
    // Until `stopAfterS` seconds after the first record, the end of the input, an exit or the timeout.
    const end = Promise.race([proc.outcome, timedOut]);
    const ended = await Promise.race([
      progress.waitForAll(end).then((all) => (all ? 'all' : 'ended')),
      untilAfterFirst(progress, env.stopAfterS as number, end).then(() => 'time' as const),
    ]);
    if (ended === 'ended' && proc.running) problems.push(`no records in the topic after ${timeoutMs} ms`);
    if (ended === 'all' && launch.kind === 'oneshot' && proc.running) {
      // A one-shot program that has written the whole input exits by itself: a stop sent now can
      // land in its own shutdown (the raw librdkafka producer's disconnect), where Node no longer
      // handles the signal and the run would read "ended with SIGTERM". Give it 30 s first.
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([proc.outcome, new Promise<void>((r) => (grace = setTimeout(r, 30_000)))]);
      clearTimeout(grace);
    }
    if (proc.running) {
      atStop = progress.count;
      stopSentAt = performance.now();
      const stopped = await proc.stop(30_000);
      if (stopped.killed) problems.push('did not stop within 30 s of SIGTERM; killed');
      outcome = stopped;
    } else outcome = await proc.outcome;
  } else if (launch.kind === 'worker') {
    const all = await progress.waitForAll(Promise.race([proc.outcome, timedOut]));
    if (!all)
      problems.push(
        proc.running ? `not all records in the topic after ${timeoutMs} ms` : 'exited before all records were in the topic',
      );
    else if (contender.transactional && launch.committedPositionNow !== undefined) {
      const readNow = launch.committedPositionNow;
      // The end offsets count a commit marker per transaction, so "every record" shows up to about
      // two transactions before the last one commits, and a stop then would leave them unwritten
      // (aborted with their offsets: consistent, but not the whole file). Wait for the committed
      // offsets to reach the end of the input first. A read that fails counts as not there yet;
      // one that does not get there in time is reported by the position check after the stop.
      const target = env.inputBytes * copies;
      const deadline = performance.now() + 60_000;
      const reached = () =>
        readNow().then(
          (position) => position === target,
          () => false,
        );
      while (proc.running && performance.now() < deadline && !(await reached())) {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const stopped = await proc.stop(30_000);
    if (stopped.killed) problems.push('did not stop within 30 s of SIGTERM; killed');
    outcome = stopped;
  } else {
    const first = await Promise.race([proc.outcome, timedOut]);
    if (first === 'timeout') {
      problems.push(`still running after ${timeoutMs} ms; killed`);
      outcome = await proc.stop(5_000);
    } else outcome = first;
  }
  clearTimeout(timer);
  const seen = await progress.finish();
  const brokerAfter = env.brokerPid === undefined ? undefined : cpuTimes(env.brokerPid);

  const exit = outcome.signal ?? `exit ${outcome.code}`;
  // A JVM stopped by SIGTERM runs its shutdown hooks and exits with 143 (so does ProducerPerformance stopped after its time).
  const cleanExit = outcome.code === 0 || ((launch.kind === 'worker' || stopSentAt !== undefined) && outcome.code === 143);
  if (!cleanExit) problems.push(`ended with ${exit}`);
  if (timeBounded) {
    if (seen.records < 1 || seen.records > expected)
      problems.push(`topic holds ${seen.records} records, expected 1 to ${expected}`);
  } else if (contender.transactional ? seen.records < expected : seen.records !== expected)
    // Transaction markers take offsets too: a transactional contender's count is checked by reading back.
    problems.push(`topic holds ${seen.records} records, expected ${expected}`);
  // Fixed-size lines: a position that covers every record in the topic is their count × the line length.
  const expectedPosition = contender.transactional ? env.inputBytes * copies : seen.records * (env.lineBytes + 1);
  // A run stopped after a fixed time may end with records written whose acknowledgement came
  // after the final commit (a worker waits a grace period for them, then commits what is
  // acknowledged): re-sent after a restart, never lost. The offsets must never cover more than the topic holds.
  const committedPosition = await launch.committedPosition?.();
  const committedRecords = launch.committedRecords === undefined ? undefined : await launch.committedRecords();
  const committedCount =
    committedRecords ?? (committedPosition === undefined ? undefined : committedPosition / (env.lineBytes + 1));
  const uncommittedRecords =
    timeBounded && committedCount !== undefined && committedCount <= seen.records ? seen.records - committedCount : undefined;
  if (launch.committedPosition !== undefined) {
    const wrong = timeBounded
      ? committedPosition === undefined || committedPosition > expectedPosition || committedPosition % (env.lineBytes + 1) !== 0
      : committedPosition !== expectedPosition;
    if (wrong)
      problems.push(
        `committed position ${committedPosition ?? 'none'}, expected ${timeBounded ? `a line end up to ${expectedPosition} (the records in the topic)` : `${expectedPosition} (the end of the file)`}`,
      );
  }
  if (launch.committedRecords !== undefined) {
    if (committedRecords === undefined || committedRecords > seen.records || (!timeBounded && committedRecords !== seen.records))
      problems.push(`committed offsets cover ${committedRecords ?? 'no'} records, the topic holds ${seen.records}`);
  }
  if (
    (env.verify || contender.transactional === true) &&
    contender.sendsLines &&
    problems.length === 0 &&
    partitions === 1 &&
    copies === 1
  ) {
    // Commit markers take offsets of their own: a transactional run must read back the lines, not the offsets.
    const lines = contender.transactional === true ? expected : seen.records;
    const wrong = await verifyTopic(env.kafka, topic, lines, env.lineBytes, contender.transactional === true);
    if (wrong !== undefined) problems.push(wrong);
  }
  await admin.deleteTopics({ topics: [topic] }).catch(() => {});

  const s = (at: number | undefined): number | undefined => (at === undefined ? undefined : (at - proc.startedAt) / 1000);
  const wallS = (outcome.exitedAt - proc.startedAt) / 1000;
  const firstRecordS = s(seen.firstAt);
  const allInTopicS = s(seen.allAt);
  const window = steadyRate(seen.samples, atStop ?? (timeBounded ? seen.records : expected));
  return {
    contender: contender.id,
    label: contender.label,
    run,
    ok: problems.length === 0,
    problems,
    records: seen.records,
    wallS,
    firstRecordS,
    allInTopicS,
    stopS:
      stopSentAt !== undefined
        ? (outcome.exitedAt - stopSentAt) / 1000
        : launch.kind === 'worker' && allInTopicS !== undefined
          ? wallS - allInTopicS
          : undefined,
    recordsPerSec: seen.records / wallS,
    steadyPerSec: window?.perSec,
    steadyFromS: s(window?.fromAt),
    steadyToS: s(window?.toAt),
    firstToAllPerSec:
      firstRecordS !== undefined && allInTopicS !== undefined && allInTopicS > firstRecordS
        ? expected / (allInTopicS - firstRecordS)
        : undefined,
    stoppedAfterS: stopSentAt === undefined ? undefined : s(stopSentAt),
    cpuS: outcome.cpuSeconds,
    threadCpu: outcome.threadCpu,
    peakRssMiB: outcome.peakRssMiB,
    rssSamples: outcome.rssSamples,
    brokerCpuS:
      brokerBefore !== undefined && brokerAfter !== undefined
        ? Math.round((brokerAfter.user + brokerAfter.system - brokerBefore.user - brokerBefore.system) * 100) / 100
        : undefined,
    committedPosition,
    uncommittedRecords,
    loadBefore,
    exit,
    logFile,
  };
}

/**
 * Creates the run's topic, asking again (up to 3 times, 1 s apart) when a busy broker answers a
 * transient error such as UNKNOWN_TOPIC_OR_PARTITION right after other topics were deleted.
 */
async function createTopic(topics: TopicAdmin, topic: string, partitions: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await topics.ensureTopics([topic], { partitions, replicationFactor: 1 });
      return;
    } catch (e) {
      if (attempt >= 3) throw e;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

/** Resolves `seconds` after the first record is in the topic (never, if `end` settles first). */
async function untilAfterFirst(progress: TopicProgress, seconds: number, end: Promise<unknown>): Promise<void> {
  let over = false;
  void end.then(() => {
    over = true;
  });
  while (progress.first === undefined) {
    if (over) return new Promise<void>(() => {});
    await new Promise((r) => setTimeout(r, 20));
  }
  const wait = (progress.first as number) + seconds * 1000 - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

/** Reads the topic back and compares every value with its line; a description of the first problem, or undefined. */
async function verifyTopic(
  kafka: Kafka,
  topic: string,
  records: number,
  lineBytes: number,
  transactional = false,
): Promise<string | undefined> {
  let count = 0;
  let problem: string | undefined;
  const reader = new TopicReader({
    kafka,
    topic,
    groupIdPrefix: 'bench-verify',
    onRecord: (r) => {
      // Commit markers take offsets of their own: with transactions, lines are counted instead.
      const seq = transactional ? count + 1 : Number(r.offset) + 1;
      count++;
      if (problem !== undefined) return;
      const expected = inputLine(seq, lineBytes);
      if (r.key !== null) problem = `record at offset ${r.offset} has a key`;
      else if (r.value?.toString('latin1') !== expected) {
        problem = `record at offset ${r.offset} is '${r.value?.toString('latin1').slice(0, 40)}...', expected line ${seq}`;
      }
    },
  });
  try {
    await reader.start();
    await reader.readToEnd(120_000);
  } finally {
    await reader.stop();
  }
  if (problem === undefined && count !== records) problem = `read back ${count} records, expected ${records}`;
  return problem;
}
