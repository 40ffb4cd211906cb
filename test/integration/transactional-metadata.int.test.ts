import { Kafka, logLevel } from 'kafkajs';
import { expect, it } from 'vitest';
import { KafkajsTransactionalSender } from '../../src/kafka/kafkajs-transactional-sender.js';
import { LibrdkafkaTransactionalSender } from '../../src/kafka/librdkafka-transactional-sender.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { RecordMetadata, TransactionalRecordSender } from '../../src/runtime/ports.js';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import { consumeAll, describeKafka, requireKafkaBootstrap, uniqueTopic } from '../helpers/kafka.js';
import { describeEachSender, type SenderKind } from '../helpers/senders.js';

const quiet = { debug() {}, info() {}, warn() {}, error() {} };
/** Transactions of this many records: the librdkafka binding hands delivery reports over 100 at a time, so most of them come after the commit's callback. */
const PER_TRANSACTION = 2000;
const TRANSACTIONS = 6;

async function openSender(
  kind: SenderKind,
  bootstrap: string,
  kafka: Kafka,
  offsetsTopic: string,
  store: KafkaOffsetStore,
): Promise<TransactionalRecordSender> {
  const transactionalId = `${offsetsTopic}-c-0`;
  const offsetMessages = (c: string, e: Parameters<KafkaOffsetStore['offsetMessages']>[1]) => store.offsetMessages(c, e);
  if (kind === 'librdkafka') {
    const config = resolveProducerConfig({}, { name: 'transactional-metadata-it' }, { task: 0 });
    return LibrdkafkaTransactionalSender.connect(bootstrap, config, {}, { transactionalId, offsetsTopic, offsetMessages });
  }
  const sender = new KafkajsTransactionalSender({ kafka, transactionalId, offsetsTopic, offsetMessages });
  await sender.connect();
  return sender;
}

describeKafka('a committed transaction reports where each record was written', () => {
  describeEachSender('transactional metadata', (kind) => {
    it('calls back every record of a committed transaction with the partition and offset Kafka gave it', async () => {
      const bootstrap = requireKafkaBootstrap();
      const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
      const offsetsTopic = uniqueTopic(`tx-metadata-offsets-${kind}`);
      const data = uniqueTopic(`tx-metadata-data-${kind}`);
      const admin = new TopicAdmin(kafka);
      await admin.ensureOffsetsTopic(offsetsTopic, { partitions: 1, replicationFactor: -1, extraConfigs: {} });
      await admin.ensureTopics([data], { partitions: 3 });
      await admin.close();
      const store = new KafkaOffsetStore({ kafka, topic: offsetsTopic, logger: quiet });
      await store.start();
      const sender = await openSender(kind, bootstrap, kafka, offsetsTopic, store);
      const reported = new Map<string, RecordMetadata>();
      const errors: Error[] = [];
      try {
        for (let t = 0; t < TRANSACTIONS; t++) {
          for (let i = 0; i < PER_TRANSACTION; i++) {
            const value = `t${t}-r${i}`;
            sender.send({ topic: data, key: Buffer.from(`k${i}`), value: Buffer.from(value) }, (e, m) => {
              if (e) errors.push(e);
              else reported.set(value, m as RecordMetadata);
            });
          }
          await sender.commitTransaction('c', [{ partition: { p: 0 }, offset: { t } }]);
          // Called back by the time the commit resolves (TransactionalRecordSender.commitTransaction).
          expect(reported.size).toBe((t + 1) * PER_TRANSACTION);
        }
      } finally {
        await sender.close();
        await store.stop();
      }
      expect(errors).toEqual([]);
      const total = TRANSACTIONS * PER_TRANSACTION;
      const unknown = [...reported.values()].filter((m) => m.partition < 0 || m.offset < 0);
      expect(unknown, `${unknown.length} of ${total} records called back without their partition and offset`).toEqual([]);

      // Each reported place holds that record.
      const records = await consumeAll(data, total, 60_000, kafka);
      const written = new Map(records.map((r) => [`${r.partition}/${r.offset}`, String(r.value)]));
      const misplaced = [...reported].filter(([value, m]) => written.get(`${m.partition}/${m.offset}`) !== value);
      expect(misplaced.slice(0, 5)).toEqual([]);
      expect(new Set([...reported.values()].map((m) => `${m.partition}/${m.offset}`)).size).toBe(total);
    }, 120_000);
  });
});
