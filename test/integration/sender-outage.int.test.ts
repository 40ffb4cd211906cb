import { type Kafka, logLevel } from 'kafkajs';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { createKafkajsSender, type KafkajsSender } from '../../src/kafka/kafkajs-sender.js';
import { LibrdkafkaSender } from '../../src/kafka/librdkafka-sender.js';
import { type ResolvedProducerConfig, resolveProducerConfig } from '../../src/kafka/producer-config.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { RecordMetadata, RecordSender, SenderStall } from '../../src/runtime/ports.js';
import { TaskRunner } from '../../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { CounterTask } from '../helpers/counter-task.js';
import { consumeAll, describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';
import { describeLibrdkafka } from '../helpers/senders.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { freePort, type KafkaBroker, startBroker } from '../kafka/broker.js';

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

async function createTopic(topic: string, partitions = 1, kafka: Kafka = testKafka()): Promise<void> {
  const admin = new TopicAdmin(kafka);
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
async function expectAcknowledgedInTopic(topic: string, outcomes: readonly Outcome[], kafka: Kafka = testKafka()): Promise<void> {
  const acked = outcomes.filter((o) => o.metadata !== undefined);
  const records = await consumeAll(topic, acked.length, 30_000, kafka);
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

/** Waits (real time) until `check` holds, polling; fails with `what` after `ms`. */
async function until(check: () => boolean, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describeKafka('a task whose broker stops answering', () => {
  it('kafkajs: stays RUNNING saying Kafka is unreachable, recovers by itself, and commits only offsets of records in the topic', async () => {
    const topic = uniqueTopic('outage-task');
    await createTopic(topic);
    const [, port] = requireKafkaBootstrap().split(',')[0]?.split(':') ?? [];
    const proxy = await TcpProxy.start(Number(port));
    const sender = await createKafkajsSender({
      kafka: { brokers: [proxy.address], logLevel: logLevel.NOTHING, socketFactory: proxy.socketFactory },
      // delivery.timeout.ms unset: retried until Kafka answers.
      config: producerConfig({ 'request.timeout.ms': '1500', 'linger.ms': '5' }),
    });
    const store = new MemoryOffsetStore();
    const task = new CounterTask();
    const runner = new TaskRunner({
      connector: 'outage',
      taskId: 0,
      task,
      config: { topic, batch: 20 },
      settings: resolveTaskSettings({ 'offset.flush.interval.ms': 200, 'task.max.in.flight.records': 200 }, {}),
      sender,
      offsetStore: store,
    });
    const committed = async () => (await store.read('outage'))[0]?.offset?.n as number | undefined;
    let healedAt = 0;
    try {
      await runner.start();
      await until(() => (task.positions.get('a') ?? 0) > 200, 'records before the outage');

      // A frozen broker: requests go nowhere, connections stay open.
      proxy.mode = 'black-hole';
      await until(() => runner.warning !== undefined, 'the task to say Kafka is unreachable');
      expect(runner.status.state).toBe('RUNNING');
      expect(runner.warning).toContain('Kafka has not acknowledged records');
      expect(runner.warning).toContain('request.timeout.ms=1500');

      // Responses lost: the broker writes what it gets, the sender hears nothing.
      proxy.mode = 'drop-responses';
      const polledInOutage = task.positions.get('a') ?? 0;
      await new Promise((r) => setTimeout(r, 4000));
      // The in-flight bound paused the source.
      expect((task.positions.get('a') ?? 0) - polledInOutage).toBeLessThanOrEqual(200);
      expect(runner.status.state).toBe('RUNNING');
      expect(runner.warning).toBeDefined();

      proxy.heal();
      healedAt = task.positions.get('a') ?? 0;
      await until(() => runner.warning === undefined, 'the stall to end');
      await until(() => (task.positions.get('a') ?? 0) > healedAt + 200, 'records after the outage');
      await runner.stop();
      expect(runner.status.state).toBe('STOPPED');
    } finally {
      await runner.stop();
      await sender.close();
      await proxy.close();
    }
    const last = (await committed()) ?? 0;
    // Records polled after the outage were acknowledged and their offsets committed.
    expect(last).toBeGreaterThan(healedAt);
    // Every record up to the committed offset is in the topic (duplicates allowed, gaps not).
    const records = await consumeAll(topic, last);
    const present = new Set(records.map((r) => (JSON.parse(String(r.value)) as { n: number }).n));
    const missing = Array.from({ length: last }, (_, i) => i + 1).filter((n) => !present.has(n));
    expect(missing).toEqual([]);
  });
});

describeKafka('librdkafka when a connection drops responses', () => {
  // librdkafka has no socketFactory: a broker of our own advertises the proxy's port, so every
  // connection librdkafka makes after the bootstrap goes through the proxy.
  let broker: KafkaBroker;
  let proxy: TcpProxy;
  beforeAll(async () => {
    const brokerPort = await freePort();
    const proxyPort = await freePort([brokerPort]);
    proxy = await TcpProxy.start(brokerPort, proxyPort);
    broker = await startBroker({
      heapMb: 384,
      port: brokerPort,
      serverProperties: { 'advertised.listeners': `PLAINTEXT://127.0.0.1:${proxyPort}` },
    });
  });
  afterAll(async () => {
    await broker?.destroy();
    await proxy?.close();
  });

  describeLibrdkafka('sender=librdkafka', () => {
    it('after message.timeout.ms passed on records whose responses were lost, acknowledges no later record that is not in the topic', async () => {
      proxy.heal();
      const kafka = testKafka(proxy.address);
      const topic = uniqueTopic('outage-rdkafka');
      await createTopic(topic, 1, kafka);
      const sender = await LibrdkafkaSender.connect(
        proxy.address,
        producerConfig({ 'delivery.timeout.ms': '3000', 'request.timeout.ms': '1000', 'linger.ms': '0' }),
      );
      const stalls: Array<SenderStall | undefined> = [];
      sender.onStall((stall) => stalls.push(stall));
      const outcomes: Outcome[] = [];
      try {
        sendAll(sender, topic, ['warm-up'], outcomes);
        await sender.flush();
        expect(outcomes[0]?.metadata).toBeDefined();

        proxy.mode = 'drop-responses';
        sendAll(sender, topic, range('lost-answer', 10), outcomes);
        await sender.flush();
        expect(outcomes.filter((o) => o.value.startsWith('lost-answer') && o.error !== undefined)).toHaveLength(10);
        expect(proxy.droppedResponses).toBeGreaterThan(0);

        proxy.heal();
        // librdkafka reconnects after its own back-off (reconnect.backoff.max.ms), which on a loaded
        // machine can outlast this test's 3 s delivery.timeout.ms: the sender must recover by
        // itself, so a round of ten is sent again, under new values, until one gets through.
        let healed = false;
        for (let round = 0; round < 10 && !healed; round++) {
          const prefix = `after-heal-${round}-`;
          sendAll(sender, topic, range(`after-heal-${round}`, 10), outcomes);
          await sender.flush();
          healed = outcomes.filter((o) => o.value.startsWith(prefix) && o.metadata !== undefined).length === 10;
          if (!healed) await new Promise((r) => setTimeout(r, 1000));
        }
        expect(healed, 'no round of ten records was acknowledged within ten rounds after the heal').toBe(true);
      } finally {
        await sender.close();
      }
      await expectAcknowledgedInTopic(topic, outcomes, kafka);
    });

    it('retries through a frozen broker when delivery.timeout.ms is not set, reports the stall, and delivers once healed', async () => {
      proxy.heal();
      const kafka = testKafka(proxy.address);
      const topic = uniqueTopic('frozen-rdkafka');
      await createTopic(topic, 1, kafka);
      const sender = await LibrdkafkaSender.connect(proxy.address, producerConfig({ 'request.timeout.ms': '1000' }));
      const stalls: Array<SenderStall | undefined> = [];
      sender.onStall((stall) => stalls.push(stall));
      const outcomes: Outcome[] = [];
      try {
        proxy.mode = 'black-hole';
        sendAll(sender, topic, range('frozen', 10), outcomes);
        await until(() => stalls.length > 0 && stalls.at(-1) !== undefined, 'a stall report');
        // Well past what message.timeout.ms would have been (Java's delivery.timeout.ms default is 120 s: not waited for here).
        await new Promise((r) => setTimeout(r, 5000));
        expect(outcomes.filter((o) => o.error !== undefined)).toEqual([]);
        proxy.heal();
        await sender.flush();
        expect(outcomes.filter((o) => o.metadata !== undefined)).toHaveLength(10);
        expect(stalls.at(-1)).toBeUndefined();
      } finally {
        await sender.close();
      }
      await expectAcknowledgedInTopic(topic, outcomes, kafka);
    });
  });
});
