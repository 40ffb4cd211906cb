import { logLevel } from 'kafkajs';
import { expect, it } from 'vitest';
import { createKafkajsSender } from '../../src/kafka/kafkajs-sender.js';
import { LibrdkafkaSender } from '../../src/kafka/librdkafka-sender.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { RecordSender } from '../../src/runtime/ports.js';
import { javaPartitions } from '../helpers/java-partitions.js';
import { consumeAll, describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';
import { describeEachSender, type SenderKind } from '../helpers/senders.js';

const PARTITIONS = 7;
const KEYS = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? `order-${i}` : i % 3 === 1 ? `${i}` : `ключ-${i}-é`));

async function openSender(kind: SenderKind, bootstrap: string): Promise<RecordSender> {
  const config = resolveProducerConfig({}, { name: 'key-partitioning-it' }, { task: 0 });
  if (kind === 'librdkafka') return LibrdkafkaSender.connect(bootstrap, config);
  return createKafkajsSender({ kafka: { brokers: bootstrap.split(','), logLevel: logLevel.NOTHING }, config });
}

describeKafka('keyed records go to the partition Java would choose', () => {
  describeEachSender('placement', (kind) => {
    it("puts every key in the partition Kafka's Java DefaultPartitioner computes for it", async () => {
      const bootstrap = requireKafkaBootstrap();
      const topic = uniqueTopic(`murmur2-${kind}`);
      const admin = new TopicAdmin(testKafka());
      try {
        await admin.ensureTopics([topic], { partitions: PARTITIONS });
      } finally {
        await admin.close();
      }
      const expected = await javaPartitions(KEYS, PARTITIONS);
      // Not a degenerate placement: the keys spread over several partitions.
      expect(new Set(expected).size).toBeGreaterThan(3);

      const sender = await openSender(kind, bootstrap);
      const reported: Array<number | undefined> = [];
      try {
        KEYS.forEach((key, i) => {
          sender.send({ topic, key: Buffer.from(key), value: Buffer.from(String(i)) }, (error, metadata) => {
            if (error) throw error;
            reported[i] = metadata?.partition;
          });
        });
        await sender.flush();
      } finally {
        await sender.close();
      }
      const records = await consumeAll(topic, KEYS.length);
      expect(records).toHaveLength(KEYS.length);
      const placed = new Map(records.map((r) => [String(r.key), r.partition]));
      expect(KEYS.map((k) => placed.get(k))).toEqual(expected);
      expect(reported).toEqual(expected);
    });
  });
});
