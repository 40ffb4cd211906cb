import { expect, it } from 'vitest';
import { runStandalone } from '../../src/cli/standalone.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { consumeAll, createTopics, describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';
import { describeEachSender } from '../helpers/senders.js';
import { writeWorkerFiles } from '../helpers/worker-files.js';

const fixture = new URL('../helpers/fixture-connector.ts', import.meta.url).pathname;

/** The worker's and connectors' files in a new folder; see {@link writeWorkerFiles}. */
const files = (worker: Record<string, string>, connectors: Array<Record<string, string>>) =>
  writeWorkerFiles('tributary-worker-', worker, connectors);

describeKafka('standalone worker on a real broker', () => {
  it("routes heartbeats to the connector's heartbeat.topic, else the worker's, never to a data topic", async () => {
    const bootstrap = requireKafkaBootstrap();
    const [dataA, dataB, beatsA, workerBeats] = ['data-a', 'data-b', 'beats-a', 'beats-worker'].map((p) => uniqueTopic(p)) as [
      string,
      string,
      string,
      string,
    ];
    await createTopics([dataA, dataB], 2);
    const worker = await runStandalone(
      await files(
        { 'bootstrap.servers': bootstrap, 'offset.storage.topic': uniqueTopic('offsets'), 'heartbeat.topic': workerBeats },
        [
          {
            name: 'a',
            'connector.class': `${fixture}#FixtureConnector`,
            topic: dataA,
            count: '3',
            'heartbeat.interval.ms': '200',
            'heartbeat.topic': beatsA,
          },
          {
            name: 'b',
            'connector.class': `${fixture}#FixtureConnector`,
            topic: dataB,
            count: '3',
            'heartbeat.interval.ms': '200',
          },
        ],
      ),
    );
    try {
      const a = await consumeAll(beatsA, 3);
      const w = await consumeAll(workerBeats, 3);
      expect(a.every((r) => JSON.parse(String(r.value)).heartbeat === true)).toBe(true);
      expect(w.every((r) => JSON.parse(String(r.value)).heartbeat === true)).toBe(true);
    } finally {
      await worker.stop();
    }
    for (const topic of [dataA, dataB]) {
      const data = await consumeAll(topic, 3);
      expect(data.map((r) => JSON.parse(String(r.value)).heartbeat)).toEqual([undefined, undefined, undefined]);
    }
  });

  it('creates the heartbeat topic once, with the topic.creation settings that apply, and logs no topic creation error', async () => {
    const bootstrap = requireKafkaBootstrap();
    const [data, beats] = [uniqueTopic('hb-data'), uniqueTopic('hb-beats')];
    const lines: Array<{ level: string; message: string | undefined; fields: object }> = [];
    const recording = (level: string) => (fields: object, message?: string) => lines.push({ level, message, fields });
    const logger = {
      debug: recording('debug'),
      info: recording('info'),
      warn: recording('warn'),
      error: recording('error'),
      child: () => logger,
    };
    const setup = await files({ 'bootstrap.servers': bootstrap, 'offset.storage.topic': uniqueTopic('offsets') }, [
      {
        name: 'hb',
        'connector.class': `${fixture}#FixtureConnector`,
        topic: data,
        count: '3',
        'heartbeat.interval.ms': '200',
        'heartbeat.topic': beats,
        'topic.creation.default.partitions': '3',
        'topic.creation.default.replication.factor': '1',
      },
    ]);
    const worker = await runStandalone({ ...setup, logger });
    try {
      await consumeAll(beats, 2);
    } finally {
      await worker.stop();
    }
    const admin = new TopicAdmin(testKafka());
    try {
      expect(await admin.partitionCount(beats)).toBe(3);
      expect(await admin.partitionCount(data)).toBe(3);
    } finally {
      await admin.close();
    }
    const text = JSON.stringify(lines);
    expect(text).not.toContain('Topic creation errors');
    expect(text).not.toContain('TOPIC_ALREADY_EXISTS');
    expect(lines.filter((l) => l.level === 'error')).toEqual([]);
  });

  it("commits offsets to the offsets topic in Kafka Connect's format once the records are in Kafka", async () => {
    const bootstrap = requireKafkaBootstrap();
    const topic = uniqueTopic('fixture');
    const offsetsTopic = uniqueTopic('offsets');
    await createTopics([topic], 2);
    const worker = await runStandalone(
      await files({ 'bootstrap.servers': bootstrap, 'offset.storage.topic': offsetsTopic, 'offset.flush.interval.ms': '200' }, [
        { name: 'fx', 'connector.class': `${fixture}#FixtureConnector`, topic, count: '5' },
      ]),
    );
    await consumeAll(topic, 5);
    await worker.stop();
    const stored = await consumeAll(offsetsTopic, 1);
    const last = stored.at(-1);
    expect(String(last?.key)).toBe('["fx",{"source":"fixture"}]');
    expect(String(last?.value)).toBe('{"i":4}');
  });
});

describeKafka('standalone worker senders on a real broker', () => {
  describeEachSender('records land as produced', (sender) => {
    it('writes records with their keys, values, headers, partitions and timestamps', async () => {
      const bootstrap = requireKafkaBootstrap();
      const topic = uniqueTopic('fixture');
      await createTopics([topic], 2);
      const worker = await runStandalone(
        await files(
          {
            sender,
            'bootstrap.servers': bootstrap,
            'offset.storage.topic': uniqueTopic('offsets'),
            'offset.flush.interval.ms': '500',
          },
          [{ name: 'fixture', 'connector.class': `${fixture}#FixtureConnector`, topic, count: '20' }],
        ),
      );
      try {
        const records = await consumeAll(topic, 20);
        expect(records).toHaveLength(20);
        for (const r of records) {
          const value = JSON.parse(String(r.value));
          expect(r.partition).toBe(value.i % 2);
          expect(JSON.parse(String(r.key))).toEqual({ id: value.i });
          expect(value.text).toBe(`record ${value.i}`);
          expect(String(r.headers['x-index'])).toBe(String(value.i));
          expect([...(r.headers['x-bytes'] ?? [])]).toEqual([value.i]);
          expect(r.timestamp).toBe(1_700_000_000_000 + value.i);
        }
        // Per Kafka partition, records keep the order the task produced them in.
        for (const p of [0, 1]) {
          const is = records.filter((r) => r.partition === p).map((r) => JSON.parse(String(r.value)).i);
          expect(is).toEqual([...is].sort((a, b) => a - b));
        }
      } finally {
        await worker.stop();
      }
    });
  });
});
