import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kafka, Kafka as KafkaClient, logLevel } from 'kafkajs';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import { uniqueTopic } from './kafka.js';

const root = new URL('../..', import.meta.url).pathname;
const quiet = { warn() {} };

/** A `tributary standalone` child process. */
export interface Cli {
  readonly child: ChildProcess;
  stderr(): string;
  readonly exited: Promise<number | null>;
}

/** Starts `tributary standalone <dir>/worker.properties <dir>/<connector>.properties`. */
export function startCli(dir: string, connector = 'source'): Cli {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'standalone', join(dir, 'worker.properties'), join(dir, `${connector}.properties`)],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  // The worker logs to stdout; keep its tail for failure messages.
  child.stdout?.on('data', (d) => (err = (err + d).slice(-20_000)));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  );
  return { child, stderr: () => err, exited };
}

/** A run directory with worker and connector files, and its topics (the data topic created with `partitions`, default 3). */
export async function runDir(
  bootstrap: string,
  options: { exactlyOnce: boolean; sender?: string; connector: Record<string, string | number>; partitions?: number },
): Promise<{ dir: string; data: string; offsets: string; heartbeats: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'tributary-eos-'));
  const data = uniqueTopic('eos-data');
  const offsets = uniqueTopic('eos-offsets');
  const heartbeats = uniqueTopic('eos-heartbeats');
  await writeFile(
    join(dir, 'worker.properties'),
    [
      'listeners=',
      `sender=${options.sender ?? 'kafkajs'}`,
      `bootstrap.servers=${bootstrap}`,
      `offset.storage.topic=${offsets}`,
      'offset.storage.partitions=3',
      'offset.flush.interval.ms=300',
      `heartbeat.topic=${heartbeats}`,
      ...(options.exactlyOnce ? ['exactly.once.source.support=enabled'] : []),
    ].join('\n'),
  );
  await writeFile(
    join(dir, 'source.properties'),
    ['name=source', `topic=${data}`, ...Object.entries(options.connector).map(([k, v]) => `${k}=${v}`)].join('\n'),
  );
  const admin = new TopicAdmin(new KafkaClient({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING }));
  await admin.ensureTopics([data], { partitions: options.partitions ?? 3 });
  await admin.close();
  return { dir, data, offsets, heartbeats };
}

/** One record read back, with its Kafka position. */
export interface ReadRecord {
  readonly partition: number;
  readonly offset: bigint;
  readonly key: string;
  readonly value: string;
}

/**
 * Every record of `topic` as a consumer with the given isolation level sees it: reads from the
 * beginning until at least `atLeast` records came and then none for `quietMs`. Sorted by
 * partition, then offset.
 */
export async function readTopic(
  kafka: Kafka,
  topic: string,
  options: { readUncommitted: boolean; atLeast: number; timeoutMs?: number; quietMs?: number },
): Promise<ReadRecord[]> {
  const records: ReadRecord[] = [];
  const consumer = kafka.consumer({
    groupId: `eos-test-${Math.random().toString(36).slice(2)}`,
    readUncommitted: options.readUncommitted,
    maxWaitTimeInMs: 200,
  });
  let last = Date.now();
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        records.push({
          partition,
          offset: BigInt(message.offset),
          key: String(message.key),
          value: String(message.value),
        });
        last = Date.now();
      },
    });
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    const quiet = options.quietMs ?? 2000;
    while (Date.now() < deadline && !(records.length >= options.atLeast && Date.now() - last > quiet)) {
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await consumer.disconnect();
  }
  return records.sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
}

/** The committed offsets of connector `source`, as a worker reads them at start (read_committed). */
export async function committedOffsets(
  kafka: Kafka,
  topic: string,
): Promise<Array<{ partition: Record<string, unknown>; offset: Record<string, unknown> | null }>> {
  const store = new KafkaOffsetStore({ kafka, topic, logger: quiet, readTimeoutMs: 30_000 });
  await store.start();
  try {
    return await store.read('source');
  } finally {
    await store.stop();
  }
}

export async function waitFor(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Sum of the end offsets (high watermarks) of a topic's partitions: records plus transaction markers. */
export async function topicEnd(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic).catch(() => []);
    return offsets.reduce((n, p) => n + Number(p.high), 0);
  } finally {
    await admin.disconnect();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
