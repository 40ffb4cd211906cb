import { afterAll, beforeAll, expect, it } from 'vitest';
import { installKafkajsRejectionGuard } from '../../src/kafka/install-kafkajs-rejection-guard.js';
// kafkajs as the worker loads it (with its fixes), not 'kafkajs' itself, which would load it unfixed first.
import { type Kafka, logLevel, produceBodies } from '../../src/kafka/kafkajs-fixes.js';
import { createKafkajsSender, KafkajsSender, type KafkajsSenderEvent } from '../../src/kafka/kafkajs-sender.js';
import { ThreadedKafkajs } from '../../src/kafka/kafkajs-thread.js';
import { kafkajsClientOptions, type ResolvedProducerConfig, resolveProducerConfig } from '../../src/kafka/producer-config.js';
import type { OutgoingRecord, RecordMetadata } from '../../src/runtime/ports.js';
import {
  type ConsumedRecord,
  consumeAll,
  describeKafka,
  requireKafkaBootstrap,
  testKafka,
  uniqueTopic,
  useOwnBroker,
} from '../helpers/kafka.js';
import type { KafkaBroker } from '../kafka/broker.js';

interface Ack {
  calls: number;
  error: Error | undefined;
  metadata: RecordMetadata | undefined;
}

async function createTopic(kafka: Kafka, topic: string, partitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }], waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}

function producerConfig(settings: Record<string, string> = {}): ResolvedProducerConfig {
  const worker: Record<string, string> = {};
  for (const [k, v] of Object.entries(settings)) worker[`producer.${k}`] = v;
  return resolveProducerConfig(worker, { name: 'kafkajs-sender-it' }, { task: 0 });
}

/** Connects a sender: kafkajs on this thread, or (`thread`) on a producer thread, as the worker runs it by default. */
async function sender(
  bootstrap: string,
  config: ResolvedProducerConfig,
  events?: KafkajsSenderEvent[],
  thread = false,
): Promise<KafkajsSender> {
  const onEvent = events === undefined ? undefined : (e: KafkajsSenderEvent) => events.push(e);
  if (!thread) {
    return createKafkajsSender({ kafka: { brokers: bootstrap.split(','), logLevel: logLevel.NOTHING }, config, onEvent });
  }
  const kafka = new ThreadedKafkajs({
    client: { brokers: bootstrap.split(','), logLevel: logLevel.NOTHING, ...kafkajsClientOptions(config) },
  });
  const s = new KafkajsSender({ kafka, config, onEvent });
  await s.connect();
  return s;
}

/** Each suite runs with kafkajs on the test's thread and on a producer thread (sender.thread=true, the worker's default). */
const THREADS = [
  { thread: false, on: '' },
  { thread: true, on: ', kafkajs on a producer thread' },
] as const;

/** Sends and records what each callback got (and how often). */
function tracked(s: KafkajsSender, r: OutgoingRecord, acks: Ack[]): void {
  const ack: Ack = { calls: 0, error: undefined, metadata: undefined };
  acks.push(ack);
  s.send(r, (error, metadata) => {
    ack.calls++;
    ack.error = error;
    ack.metadata = metadata;
  });
}

function describeEvents(events: readonly KafkajsSenderEvent[]): string {
  const retries = events.flatMap((e) => (e.type === 'retry' ? [e] : []));
  const names = new Set(retries.map((e) => (e.error instanceof Error ? `${e.error.name}(${e.error.message})` : String(e.error))));
  const reordered = events.filter((e) => e.type === 'reordered').length;
  return `${retries.length} sender-level re-send(s) [${[...names].join('; ')}], ${reordered} re-send(s) after kafkajs reordered batches`;
}

/** Per partition, the values in offset order. */
function valuesByPartition(records: readonly ConsumedRecord[]): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const r of records) {
    const list = out.get(r.partition) ?? [];
    list.push(String(r.value));
    out.set(r.partition, list);
  }
  return out;
}

for (const { thread, on } of THREADS) {
  describeKafka(`KafkajsSender on a real broker${on}`, () => {
    let kafka: Kafka;
    beforeAll(() => {
      kafka = testKafka();
    });

    it('writes keys, values, headers, timestamps and explicit partitions as given, and reports their offsets', async () => {
      const topic = uniqueTopic('sender-fields');
      await createTopic(kafka, topic, 3);
      const s = await sender(requireKafkaBootstrap(), producerConfig(), undefined, thread);
      const acks: Ack[] = [];
      const sent: OutgoingRecord[] = [
        {
          topic,
          partition: 2,
          key: Buffer.from('k1'),
          value: Buffer.from('v1'),
          headers: { h: Buffer.from('x'), s: 'str' },
          timestamp: 1_600_000_000_000,
        },
        { topic, partition: 2, key: null, value: Buffer.from('v2'), timestamp: 1_600_000_000_001 },
        { topic, partition: 0, key: Buffer.from([0, 255, 1]), value: null, timestamp: 1_600_000_000_002 },
        { topic, partition: 1, key: Buffer.from('k4'), value: Buffer.from('') },
      ];
      const before = Date.now();
      const onePass = produceBodies.onePass;
      for (const r of sent) tracked(s, r, acks);
      await s.flush();
      await s.close();
      // On this thread the request went through the one-pass encoder (the thread has its own count).
      if (!thread) expect(produceBodies.onePass).toBeGreaterThan(onePass);
      expect(acks.map((a) => [a.calls, a.error])).toEqual(sent.map(() => [1, undefined]));
      expect(acks.map((a) => a.metadata && { ...a.metadata, timestamp: undefined })).toEqual([
        { topic, partition: 2, offset: 0, timestamp: undefined },
        { topic, partition: 2, offset: 1, timestamp: undefined },
        { topic, partition: 0, offset: 0, timestamp: undefined },
        { topic, partition: 1, offset: 0, timestamp: undefined },
      ]);
      // The record sent without a timestamp is stamped by kafkajs, which does not say when.
      expect(acks[3]?.metadata?.timestamp).toBeUndefined();
      const after = Date.now();

      const got = await consumeAll(topic, 4);
      const byOffset = (p: number, o: number) => got.find((r) => r.partition === p && r.offset === String(o));
      const first = byOffset(2, 0);
      expect(String(first?.key)).toBe('k1');
      expect(String(first?.value)).toBe('v1');
      expect(first?.headers).toEqual({ h: Buffer.from('x'), s: Buffer.from('str') });
      expect(first?.timestamp).toBe(1_600_000_000_000);
      expect(byOffset(2, 1)).toMatchObject({ key: null, value: Buffer.from('v2'), timestamp: 1_600_000_000_001 });
      expect(byOffset(0, 0)).toMatchObject({ key: Buffer.from([0, 255, 1]), value: null, timestamp: 1_600_000_000_002 });
      expect(byOffset(1, 0)).toMatchObject({ key: Buffer.from('k4'), value: Buffer.from('') });
      const stamped = Number(byOffset(1, 0)?.timestamp);
      expect(stamped).toBeGreaterThanOrEqual(before);
      expect(stamped).toBeLessThanOrEqual(after);
    });

    it('keeps per-partition order across many batches and reports where each record landed', async () => {
      const topic = uniqueTopic('sender-order');
      await createTopic(kafka, topic, 4);
      const s = await sender(requireKafkaBootstrap(), producerConfig({ 'batch.max.records': '250' }), undefined, thread);
      const acks: Ack[] = [];
      const n = 20_000;
      for (let i = 0; i < n; i++) {
        // Keyed, keyless and explicit-partition records mixed.
        const kind = i % 3;
        tracked(
          s,
          {
            topic,
            key: kind === 0 ? Buffer.from(`key-${i % 17}`) : null,
            partition: kind === 2 ? i % 4 : undefined,
            value: Buffer.from(String(i)),
          },
          acks,
        );
        if (i % 2000 === 1999) await new Promise((r) => setImmediate(r));
      }
      await s.flush();
      await s.close();
      expect(acks.every((a) => a.calls === 1 && a.error === undefined)).toBe(true);

      const got = await consumeAll(topic, n);
      expect(got).toHaveLength(n); // idempotent, no outage: exactly once
      for (const [, values] of valuesByPartition(got)) {
        const seqs = values.map(Number);
        for (let k = 1; k < seqs.length; k++) expect(seqs[k]).toBeGreaterThan(seqs[k - 1] as number);
      }
      // Each callback's partition and offset point at its own record.
      const at = new Map(got.map((r) => [`${r.partition}:${r.offset}`, String(r.value)]));
      acks.forEach((a, i) => {
        expect(at.get(`${a.metadata?.partition}:${a.metadata?.offset}`)).toBe(String(i));
      });
    });

    it('fails records for a topic that cannot exist at once, saying which topic', async () => {
      const s = await sender(requireKafkaBootstrap(), producerConfig(), undefined, thread);
      const acks: Ack[] = [];
      tracked(s, { topic: 'bad topic name!', key: null, value: Buffer.from('x') }, acks);
      await s.flush();
      await s.close();
      expect(acks[0]?.calls).toBe(1);
      expect(acks[0]?.error?.message).toContain("'bad topic name!'");
    });
  });
}

for (const { thread, on } of THREADS) {
  describeKafka(`KafkajsSender when the broker goes away and comes back${on}`, () => {
    // A broker of this suite's own: the shared one must not be stopped.
    const ownBroker = useOwnBroker();
    let broker: KafkaBroker;
    let kafka: Kafka;
    const unhandled: Error[] = [];
    let uninstall: () => void = () => {};

    beforeAll(() => {
      uninstall = installKafkajsRejectionGuard((e) => unhandled.push(e));
      broker = ownBroker();
      kafka = testKafka(broker.bootstrapServers);
    });
    afterAll(() => {
      if (unhandled.length > 0) console.warn(`kafkajs rejections nobody handled: ${unhandled.map((e) => e.message).join(' | ')}`);
      uninstall();
    });

    /**
     * Sends `total` records at a steady pace, stops the broker (SIGTERM, or SIGKILL with `kill`)
     * after a third of them for `downMs`, starts it again, and returns what the callbacks got and
     * what is in the topic.
     */
    async function outage(config: ResolvedProducerConfig, total: number, downMs: number, how: 'stop' | 'kill' = 'stop') {
      const topic = uniqueTopic('sender-outage');
      await createTopic(kafka, topic, 3);
      const events: KafkajsSenderEvent[] = [];
      const s = await sender(broker.bootstrapServers, config, events, thread);
      const acks: Ack[] = [];
      let bounced: Promise<void> | undefined;
      for (let i = 0; i < total; i++) {
        tracked(s, { topic, key: Buffer.from(`k${i % 11}`), value: Buffer.from(String(i)) }, acks);
        if (i === Math.floor(total / 3)) {
          bounced = (async () => {
            await (how === 'stop' ? broker.stop() : broker.kill());
            await new Promise((r) => setTimeout(r, downMs));
            await broker.start();
          })();
        }
        if (i % 50 === 49) await new Promise((r) => setTimeout(r, 5));
      }
      await bounced;
      await s.flush();
      await s.close();
      const got = await consumeAll(topic, total, 60_000, kafka);
      return { acks, got, events };
    }

    function expectNothingLostAndAckedInOrder(acks: Ack[], got: ConsumedRecord[], total: number): void {
      expect(acks.filter((a) => a.calls !== 1)).toEqual([]);
      expect(acks.map((a) => a.error?.message).filter((m) => m !== undefined)).toEqual([]);
      const values = new Set(got.map((r) => String(r.value)));
      for (let i = 0; i < total; i++) expect(values.has(String(i))).toBe(true);
      // The acknowledged copy of each record is where the callback said, and acknowledged
      // offsets grow in send order within each partition.
      const at = new Map(got.map((r) => [`${r.partition}:${r.offset}`, String(r.value)]));
      const lastOffset = new Map<number, number>();
      acks.forEach((a, i) => {
        const md = a.metadata;
        expect(at.get(`${md?.partition}:${md?.offset}`)).toBe(String(i));
        const p = md?.partition ?? -1;
        const offset = md?.offset ?? -1;
        expect(offset).toBeGreaterThan(lastOffset.get(p) ?? -1);
        lastOffset.set(p, offset);
      });
    }

    it.each(['stop', 'kill'] as const)(
      'loses nothing and writes nothing twice with the defaults (idempotent, one in flight): broker %s',
      async (how) => {
        const total = 6000;
        const { acks, got, events } = await outage(producerConfig(), total, 4000, how);
        expectNothingLostAndAckedInOrder(acks, got, total);
        expect(got).toHaveLength(total);
        for (const [, values] of valuesByPartition(got)) {
          const seqs = values.map(Number);
          for (let k = 1; k < seqs.length; k++) expect(seqs[k]).toBeGreaterThan(seqs[k - 1] as number);
        }
        console.log(`idempotent outage (${how}): ${describeEvents(events)}`);
      },
    );

    it('loses nothing and keeps acknowledged records in order with idempotence off and 3 in flight', async () => {
      const total = 6000;
      const config = producerConfig({ 'enable.idempotence': 'false', 'max.in.flight.requests.per.connection': '3' });
      const { acks, got, events } = await outage(config, total, 4000);
      expectNothingLostAndAckedInOrder(acks, got, total);
      console.log(`non-idempotent outage: ${got.length - total} duplicate(s); ${describeEvents(events)}`);
    });
  });
}
