import { logLevel } from 'kafkajs';
import { afterEach, expect, it } from 'vitest';
import { createKafkajsSender, type KafkajsSender } from '../../src/kafka/kafkajs-sender.js';
import { type ResolvedProducerConfig, resolveProducerConfig } from '../../src/kafka/producer-config.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { RecordMetadata, RecordSender } from '../../src/runtime/ports.js';
import { consumeAll, describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/** What one record's callback said. */
interface Outcome {
  readonly value: string;
  error?: Error;
  metadata?: RecordMetadata;
}

function producerConfig(settings: Record<string, string>): ResolvedProducerConfig {
  const worker: Record<string, string> = {};
  for (const [k, v] of Object.entries(settings)) worker[`producer.${k}`] = v;
  return resolveProducerConfig(worker, { name: 'sender-outage-it' }, { task: 0 });
}

async function createTopic(topic: string, partitions = 1): Promise<void> {
  const admin = new TopicAdmin(testKafka());
  try {
    await admin.ensureTopics([topic], { partitions });
  } finally {
    await admin.close();
  }
}

function sendAll(sender: RecordSender, topic: string, values: readonly string[], into: Outcome[]): void {
  for (const value of values) {
    const outcome: Outcome = { value };
    into.push(outcome);
    sender.send({ topic, partition: 0, key: null, value: Buffer.from(value) }, (error, metadata) => {
      if (error) outcome.error = error;
      else outcome.metadata = metadata;
    });
  }
}

/** Every record reported acknowledged is in the topic, at the offset it was reported with. */
async function expectAcknowledgedInTopic(topic: string, outcomes: readonly Outcome[]): Promise<void> {
  const acked = outcomes.filter((o) => o.metadata !== undefined);
  const records = await consumeAll(topic, acked.length);
  const atOffset = new Map(records.map((r) => [`${r.partition}/${r.offset}`, String(r.value)]));
  const missing = acked.filter((o) => atOffset.get(`${o.metadata?.partition}/${o.metadata?.offset}`) !== o.value);
  expect(
    missing.map(
      (o) =>
        `${o.value} reported at ${o.metadata?.partition}/${o.metadata?.offset}, which holds ${atOffset.get(`${o.metadata?.partition}/${o.metadata?.offset}`)}`,
    ),
  ).toEqual([]);
}

const range = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describeKafka('senders when a connection drops responses', () => {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });

  async function kafkajsThroughProxy(settings: Record<string, string>): Promise<{ sender: KafkajsSender; proxy: TcpProxy }> {
    const [, port] = requireKafkaBootstrap().split(',')[0]?.split(':') ?? [];
    const proxy = await TcpProxy.start(Number(port));
    cleanups.push(() => proxy.close());
    const sender = await createKafkajsSender({
      kafka: { brokers: [proxy.address], logLevel: logLevel.NOTHING, socketFactory: proxy.socketFactory },
      config: producerConfig(settings),
    });
    cleanups.push(() => sender.close());
    return { sender, proxy };
  }

  it('kafkajs: after giving up on a batch whose responses were lost, acknowledges no later record that is not in the topic', async () => {
    const topic = uniqueTopic('outage-giveup');
    await createTopic(topic);
    const { sender, proxy } = await kafkajsThroughProxy({
      'delivery.timeout.ms': '3000',
      'request.timeout.ms': '1000',
      'linger.ms': '0',
    });
    const outcomes: Outcome[] = [];
    sendAll(sender, topic, ['warm-up'], outcomes);
    await sender.flush();
    expect(outcomes[0]?.metadata).toBeDefined();

    // The broker writes the batch; its answers are lost until the sender gives up on it.
    proxy.mode = 'drop-responses';
    sendAll(sender, topic, range('lost-answer', 10), outcomes);
    await sender.flush();
    expect(outcomes.filter((o) => o.value.startsWith('lost-answer') && o.error !== undefined)).toHaveLength(10);
    expect(proxy.droppedResponses).toBeGreaterThan(0);

    // Healed: a batch of the same size follows.
    proxy.heal();
    sendAll(sender, topic, range('after-heal', 10), outcomes);
    await sender.flush();
    // Sent again on a fresh producer, so acknowledged (and, below, really in the topic).
    expect(outcomes.filter((o) => o.value.startsWith('after-heal') && o.metadata !== undefined)).toHaveLength(10);

    await expectAcknowledgedInTopic(topic, outcomes);
  });
});
