import { Kafka, logLevel } from 'kafkajs';
import { expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { silentLogger } from '../../src/api/logger.js';
import { kafkaAdapters } from '../../src/cli/kafka-adapters.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { OffsetEntry } from '../../src/runtime/ports.js';
import { Worker } from '../../src/runtime/worker.js';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import { readTopic, waitFor } from '../helpers/exactly-once-runs.js';
import { describeKafka, requireKafkaBootstrap, uniqueTopic } from '../helpers/kafka.js';
import { describeEachSender } from '../helpers/senders.js';

const quiet = { warn() {} };

/** What a fresh reader finds in an offsets topic for connector `c`, as sequence → seq. */
async function storedSeqs(kafka: Kafka, topic: string): Promise<Map<number, number>> {
  const store = new KafkaOffsetStore({ kafka, topic, logger: quiet, readTimeoutMs: 30_000 });
  await store.start();
  try {
    const entries: OffsetEntry[] = await store.read('c');
    return new Map(entries.map((e) => [Number(e.partition.sequence), Number(e.offset?.seq)]));
  } finally {
    await store.stop();
  }
}

describeKafka('a connector-specific offsets.storage.topic (KIP-618) on the real broker', () => {
  for (const exactlyOnce of [true, false]) {
    describeEachSender(exactlyOnce ? 'exactly-once' : 'at-least-once', (sender) => {
      it("writes its offsets to its own topic, falls back to the global topic's offsets, and resumes from its own topic after a restart", async () => {
        const bootstrap = requireKafkaBootstrap();
        const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
        const global = uniqueTopic('cot-global');
        const own = uniqueTopic('cot-own');
        const data = uniqueTopic('cot-data');
        const admin = new TopicAdmin(kafka);
        await admin.ensureTopics([data], { partitions: 1 });
        await admin.close();
        // The global topic already has an offset for sequence 1 (as if the connector ran before without its own topic).
        const seed = new KafkaOffsetStore({ kafka, topic: global, partitions: 1, logger: quiet });
        await seed.start();
        await seed.write('c', [{ partition: { task: 0, sequence: 1 }, offset: { seq: 50 } }]);
        await seed.stop();

        const workerConfig = {
          'bootstrap.servers': bootstrap,
          'offset.storage.topic': global,
          'offset.storage.partitions': '1',
          'offset.flush.interval.ms': '200',
          'exactly.once.source.support': exactlyOnce ? 'enabled' : 'disabled',
          sender,
        };
        const run = async (maxRecords: number) => {
          const adapters = kafkaAdapters(workerConfig, silentLogger);
          const worker = new Worker({
            config: workerConfig,
            ...adapters,
            loadConnector: async () => DatagenConnector,
            close: () => adapters.close(),
          });
          await worker.start();
          await worker.createConnector('c', {
            'connector.class': 'datagen',
            topic: data,
            rate: '0',
            partitions: '2',
            'max.records': String(maxRecords),
            'offsets.storage.topic': own,
          });
          return worker;
        };

        // First run: sequence 0 starts from nothing, sequence 1 from the global topic's seq 50; 10 records.
        const first = await run(60);
        await waitFor(
          async () => {
            const seqs = await storedSeqs(kafka, own);
            return seqs.get(0) === 5 && seqs.get(1) === 55;
          },
          60_000,
          "the first run's offsets in the connector's own topic",
        );
        expect(await first.connectorOffsets('c')).toHaveLength(2);
        await first.stop();
        // The connector's offsets went to its own topic, not the global one.
        expect(await storedSeqs(kafka, global)).toEqual(new Map([[1, 50]]));

        // Second run: resumes from its own topic (sequence 0 at 5, sequence 1 at 55), 10 more records.
        const second = await run(70);
        await waitFor(
          async () => {
            const seqs = await storedSeqs(kafka, own);
            return seqs.get(0) === 10 && seqs.get(1) === 60;
          },
          60_000,
          "the second run's offsets in the connector's own topic",
        );
        await second.stop();
        expect(await storedSeqs(kafka, global)).toEqual(new Map([[1, 50]]));

        const records = await readTopic(kafka, data, { readUncommitted: false, atLeast: 20 });
        const seqsOf = (sequence: number) =>
          records
            .map((r) => JSON.parse(r.value) as { sequence: number; seq: number })
            .filter((v) => v.sequence === sequence)
            .map((v) => v.seq);
        expect(seqsOf(0)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(seqsOf(1)).toEqual([51, 52, 53, 54, 55, 56, 57, 58, 59, 60]);
      }, 120_000);
    });
  }
});
