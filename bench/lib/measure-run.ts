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
 *    input file's size as the committed position; otherwise the run is marked failed.
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
import { cpuTimes, loadAverage } from './proc.js';
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
  /** N / wall time. */
  readonly recordsPerSec: number;
  /** N / (all in topic − first record): the rate once running. */
  readonly steadyPerSec: number | undefined;
  readonly cpuS: number;
  readonly peakRssMiB: number;
  /** CPU seconds the broker spent during the run (when the harness started it). */
  readonly brokerCpuS: number | undefined;
  /** Committed byte position (workers), and the input file's size it should equal. */
  readonly committedPosition: number | undefined;
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
  const topic = `bench-${contender.id}-${run}-${Date.now().toString(36)}`;
  await topics.ensureTopics([topic], { partitions: 1, replicationFactor: 1 });
  const dir = join(env.runsDir, `${contender.id}-${run}`);
  await mkdir(dir, { recursive: true });
  const context: RunContext = {
    bootstrap: env.bootstrap,
    topic,
    inputFile: env.inputFile,
    records: env.records,
    lineBytes: env.lineBytes,
    dir,
    restPort: await freePort(),
  };
  const launch = await contender.launch(context);
  const logFile = join(dir, 'process.log');
  const problems: string[] = [];
  const loadBefore = loadAverage();
  const brokerBefore = env.brokerPid === undefined ? undefined : cpuTimes(env.brokerPid);

  const proc = startMetered(launch.command, launch.args, { cwd: dir, env: launch.env, logFile });
  const progress = new TopicProgress(admin, topic, env.records);
  progress.start();
  const timeoutMs = 60_000 + env.records / 5;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((r) => {
    timer = setTimeout(() => r('timeout'), timeoutMs);
  });
  let outcome: Awaited<typeof proc.outcome>;
  if (launch.kind === 'worker') {
    const all = await progress.waitForAll(Promise.race([proc.outcome, timedOut]));
    if (!all)
      problems.push(
        proc.running ? `not all records in the topic after ${timeoutMs} ms` : 'exited before all records were in the topic',
      );
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
  // A JVM stopped by SIGTERM runs its shutdown hooks and exits with 143.
  const cleanExit = outcome.code === 0 || (launch.kind === 'worker' && outcome.code === 143);
  if (!cleanExit) problems.push(`ended with ${exit}`);
  // Transaction markers take offsets too: a transactional contender's count is checked by reading back.
  if (contender.transactional ? seen.records < env.records : seen.records !== env.records)
    problems.push(`topic holds ${seen.records} records, expected ${env.records}`);
  const committedPosition = await launch.committedPosition?.();
  if (launch.committedPosition !== undefined && committedPosition !== env.inputBytes) {
    problems.push(`committed position ${committedPosition ?? 'none'}, expected ${env.inputBytes} (the end of the file)`);
  }
  if ((env.verify || contender.transactional === true) && contender.sendsLines && problems.length === 0) {
    const wrong = await verifyTopic(env.kafka, topic, env.records, env.lineBytes, contender.transactional === true);
    if (wrong !== undefined) problems.push(wrong);
  }
  await admin.deleteTopics({ topics: [topic] }).catch(() => {});

  const s = (at: number | undefined): number | undefined => (at === undefined ? undefined : (at - proc.startedAt) / 1000);
  const wallS = (outcome.exitedAt - proc.startedAt) / 1000;
  const firstRecordS = s(seen.firstAt);
  const allInTopicS = s(seen.allAt);
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
    stopS: launch.kind === 'worker' && allInTopicS !== undefined ? wallS - allInTopicS : undefined,
    recordsPerSec: env.records / wallS,
    steadyPerSec:
      firstRecordS !== undefined && allInTopicS !== undefined && allInTopicS > firstRecordS
        ? env.records / (allInTopicS - firstRecordS)
        : undefined,
    cpuS: outcome.cpuSeconds,
    peakRssMiB: outcome.peakRssMiB,
    brokerCpuS:
      brokerBefore !== undefined && brokerAfter !== undefined
        ? Math.round((brokerAfter.user + brokerAfter.system - brokerBefore.user - brokerBefore.system) * 100) / 100
        : undefined,
    committedPosition,
    loadBefore,
    exit,
    logFile,
  };
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
