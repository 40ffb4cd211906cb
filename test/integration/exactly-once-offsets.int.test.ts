import { Kafka, logLevel } from 'kafkajs';
import { expect, it } from 'vitest';
import { KafkajsTransactionalSender } from '../../src/kafka/kafkajs-transactional-sender.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { RecordMetadata } from '../../src/runtime/ports.js';
import { KafkaOffsetStore } from '../../src/storage/kafka-offset-store.js';
import { describeKafka, requireKafkaBootstrap, uniqueTopic } from '../helpers/kafka.js';

const quiet = { warn() {} };

async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describeKafka('offsets under read_committed (exactly-once)', () => {
  it('reads the offsets topic to its last stable offset at once while another producer has a transaction open, without its offsets', async () => {
    const bootstrap = requireKafkaBootstrap();
    const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
    const topic = uniqueTopic('eos-open-offsets');
    const admin = new TopicAdmin(kafka);
    await admin.ensureOffsetsTopic(topic, { partitions: 1, replicationFactor: -1, extraConfigs: {} });
    await admin.close();
    const producer = kafka.producer({ transactionalId: `${topic}-zombie`, idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const committed = await producer.transaction();
    await committed.send({ topic, messages: [{ key: '["c",{"p":1}]', value: '{"n":1}' }] });
    await committed.commit();
    // Left open, as by a worker killed or frozen mid-transaction (transaction timeout 60 s).
    const open = await producer.transaction();
    await open.send({ topic, messages: [{ key: '["c",{"p":1}]', value: '{"n":2}' }] });

    const store = new KafkaOffsetStore({ kafka, topic, logger: quiet, readTimeoutMs: 15_000 });
    const started = Date.now();
    await store.start();
    expect(await store.read('c')).toEqual([{ partition: { p: 1 }, offset: { n: 1 } }]);
    // kafkajs lists read_committed end offsets (last stable offsets): reading does not wait for the open transaction.
    expect(Date.now() - started).toBeLessThan(10_000);
    await store.stop();
    await open.abort();
    await producer.disconnect();
  }, 60_000);

  it('commits records and offsets in one transaction, and a second producer of the same transactional id fences the first', async () => {
    const bootstrap = requireKafkaBootstrap();
    const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING });
    const offsets = uniqueTopic('eos-fence-offsets');
    const data = uniqueTopic('eos-fence-data');
    const admin = new TopicAdmin(kafka);
    await admin.ensureOffsetsTopic(offsets, { partitions: 1, replicationFactor: -1, extraConfigs: {} });
    await admin.ensureTopics([data], { partitions: 2 });
    await admin.close();
    const store = new KafkaOffsetStore({ kafka, topic: offsets, logger: quiet });
    await store.start();
    const make = () =>
      new KafkajsTransactionalSender({
        kafka,
        transactionalId: `${offsets}-c-0`,
        offsetsTopic: offsets,
        offsetMessages: (c, e) => store.offsetMessages(c, e),
      });
    const first = make();
    await first.connect();
    const acks: Array<RecordMetadata | Error> = [];
    const send = (sender: KafkajsTransactionalSender, n: number) =>
      sender.send({ topic: data, key: Buffer.from(`k${n}`), value: Buffer.from(`v${n}`) }, (e, m) =>
        acks.push(e ?? (m as RecordMetadata)),
      );
    send(first, 1);
    send(first, 2);
    await first.commitTransaction('c', [{ partition: { p: 0 }, offset: { n: 2 } }]);
    expect(acks).toHaveLength(2);
    for (const a of acks) expect(a).toMatchObject({ topic: data, offset: expect.any(Number) });
    // Commit markers land just after EndTxn answers; the last stable offset moves then.
    await until(async () => (await store.read('c')).length === 1);
    expect(await store.read('c')).toEqual([{ partition: { p: 0 }, offset: { n: 2 } }]);

    const second = make();
    // Fencing completes any transaction of the older epoch first: what it committed is readable after it.
    await second.connect();
    send(first, 3);
    await expect(first.commitTransaction('c', [{ partition: { p: 0 }, offset: { n: 3 } }])).rejects.toMatchObject({
      code: 'TRANSACTION_FENCED',
    });
    expect(acks[2]).toMatchObject({ code: 'TRANSACTION_FENCED' });
    // Broken for good: a later transaction fails without touching Kafka.
    send(first, 4);
    await expect(first.commitTransaction('c', [])).rejects.toMatchObject({ code: 'TRANSACTION_FENCED' });
    expect(await store.read('c')).toEqual([{ partition: { p: 0 }, offset: { n: 2 } }]);
    send(second, 3);
    await second.commitTransaction('c', [{ partition: { p: 0 }, offset: { n: 3 } }]);
    await until(async () => JSON.stringify(await store.read('c')).includes('"n":3'));
    expect(await store.read('c')).toEqual([{ partition: { p: 0 }, offset: { n: 3 } }]);
    await Promise.all([first.close(), second.close(), store.stop()]);
  }, 60_000);
});
