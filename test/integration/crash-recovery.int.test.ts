import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { expect, it } from 'vitest';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import { consumeAll, describeKafka, requireKafkaBootstrap, startOwnBroker, uniqueTopic } from '../helpers/kafka.js';
import { describeEachSender } from '../helpers/senders.js';

const root = new URL('../..', import.meta.url).pathname;
const SEQUENCES = 3;
const quiet = { warn() {} };

interface Cli {
  child: ChildProcess;
  stderr: () => string;
  /** How the process ended: `code 0`, or `signal SIGSEGV` when a signal ended it. */
  exited: Promise<string>;
}

function startCli(dir: string): Cli {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'standalone', join(dir, 'worker.properties'), join(dir, 'gen.properties')],
    { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const exited = new Promise<string>((resolve) =>
    child.on('exit', (code, signal) => resolve(signal === null ? `code ${code}` : `signal ${signal}`)),
  );
  return { child, stderr: () => err, exited };
}

async function setUp(bootstrap: string, total: number, rate: number, sender = 'kafkajs') {
  const dir = await mkdtemp(join(tmpdir(), 'tributary-crash-'));
  const data = uniqueTopic('crash-data');
  const offsets = uniqueTopic('crash-offsets');
  await writeFile(
    join(dir, 'worker.properties'),
    [
      'listeners=',
      `sender=${sender}`,
      `bootstrap.servers=${bootstrap}`,
      `offset.storage.topic=${offsets}`,
      'offset.storage.partitions=3',
      'offset.flush.interval.ms=300',
    ].join('\n'),
  );
  await writeFile(
    join(dir, 'gen.properties'),
    [
      'name=gen',
      'connector.class=./examples/datagen/src/index.ts#DatagenConnector',
      `topic=${data}`,
      `rate=${rate}`,
      `partitions=${SEQUENCES}`,
      `max.records=${total}`,
      'batch.size=500',
      'topic.creation.default.partitions=3',
      'topic.creation.default.replication.factor=-1',
    ].join('\n'),
  );
  return { dir, data, offsets };
}

/** seq numbers present in the data topic, per datagen sequence. */
async function dataBySequence(topic: string, atLeast: number, kafka: Kafka): Promise<Map<number, Set<number>>> {
  const by = new Map<number, Set<number>>();
  for (const r of await consumeAll(topic, atLeast, 60_000, kafka)) {
    const v = JSON.parse(String(r.value));
    const set = by.get(v.sequence) ?? new Set<number>();
    by.set(v.sequence, set);
    set.add(v.seq);
  }
  return by;
}

async function committed(kafka: Kafka, topic: string): Promise<Map<number, number>> {
  const store = new KafkaOffsetStore({ kafka, topic, logger: quiet });
  await store.start();
  try {
    return new Map((await store.read('gen')).map((e) => [Number(e.partition.sequence), Number(e.offset?.seq)]));
  } finally {
    await store.stop();
  }
}

function expectComplete(by: Map<number, Set<number>>, perSequence: number) {
  for (let s = 0; s < SEQUENCES; s++) {
    const seqs = by.get(s) ?? new Set();
    const missing = Array.from({ length: perSequence }, (_, i) => i + 1).filter((n) => !seqs.has(n));
    expect(missing, `sequence ${s} is missing records`).toEqual([]);
  }
}

async function waitFor(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function topicSize(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic).catch(() => []);
    return offsets.reduce((n, p) => n + Number(p.high), 0);
  } finally {
    await admin.disconnect();
  }
}

describeKafka('crash and outage recovery', () => {
  it('resumes after SIGKILL from the committed offsets: nothing lost, no committed offset ahead of the data', async () => {
    const bootstrap = requireKafkaBootstrap();
    const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
    const total = 30_000;
    const { dir, data, offsets } = await setUp(bootstrap, total, 6000);
    const first = startCli(dir);
    await waitFor(async () => (await topicSize(kafka, data)) > 5000, 60_000, 'records before the kill');
    first.child.kill('SIGKILL');
    await first.exited;

    const afterKill = await committed(kafka, offsets);
    const present = await dataBySequence(data, 1, kafka);
    expect(afterKill.size).toBe(SEQUENCES);
    for (const [sequence, seq] of afterKill) {
      const seqs = present.get(sequence) ?? new Set();
      // Every record up to the committed offset is in Kafka.
      const missing = Array.from({ length: seq }, (_, i) => i + 1).filter((n) => !seqs.has(n));
      expect(missing, `sequence ${sequence}: committed ${seq} but records missing`).toEqual([]);
    }
    expect([...afterKill.values()].reduce((a, b) => a + b, 0)).toBeLessThan(total);

    const second = startCli(dir);
    // The topic holds duplicates of what was sent after the last commit, so count commits, not records.
    const done = async () => [...(await committed(kafka, offsets)).values()].every((n) => n === total / SEQUENCES);
    await waitFor(done, 90_000, 'every sequence committed to its end after the restart');
    second.child.kill('SIGTERM');
    expect(await second.exited, second.stderr().slice(-4000)).toBe('code 0');
    expect(second.stderr()).not.toContain('"event":"task.failed"');
    expectComplete(await dataBySequence(data, total, kafka), total / SEQUENCES);
    const final = await committed(kafka, offsets);
    expect([...final.values()]).toEqual(Array(SEQUENCES).fill(total / SEQUENCES));
  }, 240_000);
});

describeKafka('outage recovery', () => {
  describeEachSender('a broker away for a few seconds', (sender) => {
    it('loses nothing when the broker is away for a few seconds mid-stream', async () => {
      const broker = await startOwnBroker();
      const kafka = new Kafka({ brokers: broker.bootstrapServers.split(','), logLevel: logLevel.NOTHING });
      const total = 15_000;
      const { dir, data, offsets } = await setUp(broker.bootstrapServers, total, 2000, sender);
      const admin = new TopicAdmin(kafka);
      await admin.ensureTopics([data], { partitions: 3 });
      await admin.close();
      const cli = startCli(dir);
      await waitFor(async () => (await topicSize(kafka, data)) > 2000, 60_000, 'records before the outage');
      await broker.stop();
      await new Promise((r) => setTimeout(r, 4000));
      await broker.start();
      const done = async () => [...(await committed(kafka, offsets)).values()].every((n) => n === total / SEQUENCES);
      await waitFor(done, 120_000, 'every sequence committed to its end after the outage');
      cli.child.kill('SIGTERM');
      expect(await cli.exited, cli.stderr().slice(-4000)).toBe('code 0');
      expect(cli.stderr()).not.toContain('"event":"task.failed"');
      expectComplete(await dataBySequence(data, total, kafka), total / SEQUENCES);
      expect([...(await committed(kafka, offsets)).values()]).toEqual(Array(SEQUENCES).fill(total / SEQUENCES));
    }, 300_000);
  });
});
