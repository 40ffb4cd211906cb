/**
 * Heartbeat timing under full load: Tributary's standalone worker runs `examples/datagen` at
 * `rate=0` (as fast as the pipeline takes records, `record.size` ≈ the line size, one source
 * partition) with `heartbeat.interval.ms=1000` for a fixed time from its first data record, then stops. The heartbeat topic
 * is created beforehand with `message.timestamp.type=LogAppendTime`, so each heartbeat record
 * carries two times:
 *
 * - its value's `heartbeat` field: the clock when the task's `produceHeartbeatRecords()` ran,
 *   i.e. when the runtime's heartbeat timer fired (timer jitter under load);
 * - its record timestamp: when the broker appended it (timer jitter plus the wait behind data
 *   batches in the sender: linger, one request in flight).
 *
 * Reported: the intervals between consecutive heartbeats, as deviations from 1000 ms
 * (|interval − 1000|), p50 / p99 / max, for both.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Admin } from 'kafkajs';
import type { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { TopicReader } from '../../src/kafka/topic-reader.js';
import { freePort } from '../../test/kafka/broker.js';
import { properties } from '../contenders/contender.js';
import { tributaryWorkerProperties } from '../contenders/tributary.js';
import { type RunEnvironment, runAdmins } from './measure-run.js';
import { startMetered } from './metered-process.js';
import { loadAverage } from './proc.js';
import type { BenchSettings } from './settings.js';
import { percentile } from './stats.js';

export const HEARTBEAT_INTERVAL_MS = 1000;

/** Deviation figures of one series of heartbeat times. */
export interface Deviations {
  readonly intervals: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly minInterval: number;
  readonly maxInterval: number;
}

/** What the heartbeat run measured. */
export interface HeartbeatResult {
  readonly seconds: number;
  readonly heartbeats: number;
  /** Data records written meanwhile, per second: the load. */
  readonly dataPerSec: number;
  readonly cpuS: number;
  readonly peakRssMiB: number;
  /** From the value's tick time. */
  readonly timer: Deviations;
  /** From the broker's LogAppendTime. */
  readonly appended: Deviations;
  readonly loadBefore: number;
  readonly problems: readonly string[];
  readonly settings: readonly string[];
}

export async function heartbeatRun(
  settings: BenchSettings,
  env: RunEnvironment,
  cli: string,
  datagen: string,
): Promise<HeartbeatResult> {
  const admins = await runAdmins(env.kafka);
  try {
    return await measureHeartbeats(settings, env, cli, datagen, admins.admin, admins.topics);
  } finally {
    await admins.close();
  }
}

async function measureHeartbeats(
  settings: BenchSettings,
  env: RunEnvironment,
  cli: string,
  datagen: string,
  admin: Admin,
  topics: TopicAdmin,
): Promise<HeartbeatResult> {
  const stamp = Date.now().toString(36);
  const dataTopic = `bench-hb-data-${stamp}`;
  const heartbeatTopic = `bench-hb-${stamp}`;
  await topics.ensureTopics([dataTopic], { partitions: 1, replicationFactor: 1 });
  await topics.ensureTopics([heartbeatTopic], {
    partitions: 1,
    replicationFactor: 1,
    configs: { 'message.timestamp.type': 'LogAppendTime' },
  });
  const dir = join(env.runsDir, 'heartbeat');
  await mkdir(dir, { recursive: true });
  const worker = join(dir, 'worker.properties');
  const connector = join(dir, 'connector.properties');
  const restPort = await freePort();
  await writeFile(
    worker,
    properties(tributaryWorkerProperties(settings, { bootstrap: env.bootstrap, restPort }, join(dir, 'offsets.json'))),
  );
  const connectorProps = {
    name: 'bench-heartbeat',
    'connector.class': `${datagen}#DatagenConnector`,
    'tasks.max': 1,
    topic: dataTopic,
    rate: 0,
    'record.size': settings.lineBytes,
    partitions: 1,
    'batch.size': settings.sourceBatchLines,
    'value.converter': 'json',
    'heartbeat.interval.ms': HEARTBEAT_INTERVAL_MS,
    'heartbeat.topic': heartbeatTopic,
  };
  await writeFile(connector, properties(connectorProps));

  const loadBefore = loadAverage();
  const proc = startMetered(process.execPath, [...settings.nodeOptions, cli, 'standalone', worker, connector], {
    cwd: dir,
    logFile: join(dir, 'process.log'),
  });
  const problems: string[] = [];
  // The timed part starts with the first data record, so a slow start-up (a busy machine) does not eat it.
  let exited = false;
  void proc.outcome.then(() => {
    exited = true;
  });
  const startDeadline = Date.now() + 120_000;
  while (!exited && Date.now() < startDeadline) {
    const held = await admin.fetchTopicOffsets(dataTopic).then(
      (o) => o.reduce((sum, p) => sum + Number(p.high), 0),
      () => 0,
    );
    if (held > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const ended = await Promise.race([
    proc.outcome.then(() => true),
    new Promise<false>((r) => setTimeout(() => r(false), settings.heartbeatSeconds * 1000)),
  ]);
  if (ended) problems.push('the worker exited on its own');
  const outcome = await proc.stop(30_000);
  const seconds = (outcome.exitedAt - proc.startedAt) / 1000;
  const dataRecords = (await admin.fetchTopicOffsets(dataTopic)).reduce((sum, p) => sum + Number(p.high), 0);

  const beats: Array<{ tick: number; appended: number }> = [];
  const reader = new TopicReader({
    kafka: env.kafka,
    topic: heartbeatTopic,
    groupIdPrefix: 'bench-heartbeats',
    onRecord: (r) => {
      const value = JSON.parse(r.value?.toString('utf8') ?? 'null') as { heartbeat?: number } | null;
      beats.push({ tick: Number(value?.heartbeat), appended: r.timestamp });
    },
  });
  try {
    await reader.start();
    await reader.readToEnd(60_000);
  } finally {
    await reader.stop();
  }
  await admin.deleteTopics({ topics: [dataTopic, heartbeatTopic] }).catch(() => {});
  if (beats.length < 3) problems.push(`only ${beats.length} heartbeat records`);
  return {
    seconds,
    heartbeats: beats.length,
    // The data rate over the time the task ran: the first heartbeat comes one interval after start.
    dataPerSec: dataRecords / seconds,
    cpuS: outcome.cpuSeconds,
    peakRssMiB: outcome.peakRssMiB,
    timer: deviations(beats.map((b) => b.tick)),
    appended: deviations(beats.map((b) => b.appended)),
    loadBefore,
    problems,
    settings: [
      `Tributary standalone, examples/datagen: rate=0, record.size=${settings.lineBytes}, partitions=1, batch.size=${settings.sourceBatchLines}, ` +
        `value.converter=json, heartbeat.interval.ms=${HEARTBEAT_INTERVAL_MS}; same worker and producer settings as above`,
      `heartbeat topic with message.timestamp.type=LogAppendTime; run for ${settings.heartbeatSeconds} s`,
    ],
  };
}

function deviations(times: readonly number[]): Deviations {
  const intervals: number[] = [];
  for (let i = 1; i < times.length; i++) intervals.push((times[i] as number) - (times[i - 1] as number));
  const dev = intervals.map((d) => Math.abs(d - HEARTBEAT_INTERVAL_MS));
  return {
    intervals: intervals.length,
    p50: percentile(dev, 50),
    p99: percentile(dev, 99),
    max: percentile(dev, 100),
    minInterval: percentile(intervals, 0),
    maxInterval: percentile(intervals, 100),
  };
}
