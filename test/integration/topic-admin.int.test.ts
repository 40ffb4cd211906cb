import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isTributaryError, type TributaryError } from '../../src/api/errors.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { topicCreationSettings } from '../../src/runtime/topic-creation-settings.js';
import { describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';
import { freePort } from '../kafka/broker.js';

async function rejection(p: Promise<unknown>): Promise<TributaryError> {
  try {
    await p;
  } catch (e) {
    if (isTributaryError(e)) return e;
    throw e;
  }
  throw new Error('expected a rejection');
}

describeKafka('TopicAdmin', () => {
  let admin: TopicAdmin;

  beforeAll(() => {
    admin = new TopicAdmin(testKafka());
  });
  afterAll(async () => {
    await admin.close();
  });

  it('creates the offsets topic compacted with 25 partitions by default, then finds it', async () => {
    const topic = uniqueTopic('offsets');
    expect(await admin.ensureOffsetsTopic(topic)).toEqual({ created: true, partitions: 25 });
    expect(await admin.topicConfig(topic, 'cleanup.policy')).toBe('compact');
    expect(await admin.ensureOffsetsTopic(topic, { partitions: 3 })).toEqual({ created: false, partitions: 25 });
  });

  it('passes extra configs through but always makes the offsets topic compact', async () => {
    const topic = uniqueTopic('offsets');
    await admin.ensureOffsetsTopic(topic, {
      partitions: 2,
      replicationFactor: 1,
      extraConfigs: { 'cleanup.policy': 'delete', 'min.compaction.lag.ms': '1234' },
    });
    expect(await admin.topicConfig(topic, 'cleanup.policy')).toBe('compact');
    expect(await admin.topicConfig(topic, 'min.compaction.lag.ms')).toBe('1234');
    expect(await admin.partitionCount(topic)).toBe(2);
  });

  it('refuses an existing offsets topic that is not compacted, saying which and how to fix it', async () => {
    const topic = uniqueTopic('not-compacted');
    await admin.ensureTopics([topic], { partitions: 1 });
    const error = await rejection(admin.ensureOffsetsTopic(topic));
    expect(error.code).toBe('TOPIC_INVALID');
    expect(error.message).toContain(`Offsets topic '${topic}' has cleanup.policy=delete`);
    expect(error.message).toContain("must be exactly 'compact'");
    expect(error.message).toContain(`--entity-name ${topic} --add-config cleanup.policy=compact`);
  });

  it("refuses 'compact,delete' too", async () => {
    const topic = uniqueTopic('compact-delete');
    await admin.ensureTopics([topic], { configs: { 'cleanup.policy': 'compact,delete' } });
    const error = await rejection(admin.ensureOffsetsTopic(topic));
    expect(error.code).toBe('TOPIC_INVALID');
    expect(error.message).toContain('cleanup.policy=compact,delete');
  });

  it('ensureTopics is idempotent and reports what it created', async () => {
    const [a, b] = [uniqueTopic('a'), uniqueTopic('b')];
    expect((await admin.ensureTopics([a, b, a], { partitions: 3, configs: { 'retention.ms': '60000' } })).sort()).toEqual(
      [a, b].sort(),
    );
    expect(await admin.ensureTopics([a, b])).toEqual([]);
    expect(await admin.partitionCount(a)).toBe(3);
    expect(await admin.topicConfig(b, 'retention.ms')).toBe('60000');
    expect(await admin.topicExists(a)).toBe(true);
    expect(await admin.topicExists(uniqueTopic('missing'))).toBe(false);
  });

  it('copes with concurrent creators of the same topic', async () => {
    const topic = uniqueTopic('race');
    const admins = Array.from({ length: 4 }, () => new TopicAdmin({ bootstrapServers: requireKafkaBootstrap() }));
    try {
      const results = await Promise.all(admins.map((a) => a.ensureTopics([topic], { partitions: 4 })));
      expect(results.flat()).toEqual([topic]); // exactly one of them created it, none failed
      expect(await admin.partitionCount(topic)).toBe(4);
    } finally {
      await Promise.all(admins.map((a) => a.close()));
    }
  });

  it('uses the broker defaults for -1', async () => {
    const topic = uniqueTopic('defaults');
    await admin.ensureTopics([topic], { partitions: -1, replicationFactor: -1 });
    expect(await admin.partitionCount(topic)).toBe(1); // num.partitions=1 on the test broker
  });

  it('turns a refusal by the broker into TOPIC_INVALID naming the topic and the reason', async () => {
    const topic = uniqueTopic('too-replicated');
    const error = await rejection(admin.ensureTopics([topic], { partitions: 1, replicationFactor: 3 }));
    expect(error.code).toBe('TOPIC_INVALID');
    expect(error.message).toContain(`Could not create topic '${topic}' (partitions=1, replication.factor=3)`);
    expect(error.message).toContain('INVALID_REPLICATION_FACTOR');

    const bad = await rejection(admin.ensureTopics([uniqueTopic('bad-config')], { configs: { 'cleanup.policy': 'sometimes' } }));
    expect(bad.code).toBe('TOPIC_INVALID');
    expect(bad.message).toContain('INVALID_CONFIG');
    expect(bad.message).toContain('cleanup.policy=sometimes');
  });

  it('creates topics with KIP-158 settings', async () => {
    const prefix = uniqueTopic('kip158');
    const settings = topicCreationSettings({
      'topic.creation.default.replication.factor': '-1',
      'topic.creation.default.partitions': '2',
      'topic.creation.groups': 'compacted',
      'topic.creation.compacted.include': `${prefix}\\.state\\..*`,
      'topic.creation.compacted.partitions': '5',
      'topic.creation.compacted.cleanup.policy': 'compact',
    });
    const stateTopic = `${prefix}.state.users`;
    const dataTopic = `${prefix}.data`;
    for (const topic of [stateTopic, dataTopic]) {
      const s = settings?.settingsFor(topic);
      if (s === undefined) throw new Error('no settings');
      await admin.ensureTopics([topic], s);
    }
    expect(await admin.partitionCount(stateTopic)).toBe(5);
    expect(await admin.topicConfig(stateTopic, 'cleanup.policy')).toBe('compact');
    expect(await admin.partitionCount(dataTopic)).toBe(2);
    expect(await admin.topicConfig(dataTopic, 'cleanup.policy')).toBe('delete');
  });

  it('reports an unreachable cluster as BROKER_UNAVAILABLE (retriable)', async () => {
    const port = await freePort();
    const nowhere = new TopicAdmin(
      new Kafka({
        clientId: 'nowhere',
        brokers: [`127.0.0.1:${port}`],
        logLevel: logLevel.NOTHING,
        connectionTimeout: 300,
        retry: { retries: 1, initialRetryTime: 100 },
      }),
    );
    try {
      const error = await rejection(nowhere.ensureTopics(['x']));
      expect(error.code).toBe('BROKER_UNAVAILABLE');
      expect(error.retriable).toBe(true);
    } finally {
      await nowhere.close();
    }
  });
});
