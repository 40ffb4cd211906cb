import fc from 'fast-check';
import { Partitioners } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import { KafkajsSender, type KafkajsSenderEvent } from '../../src/kafka/kafkajs-sender.js';
import { type ResolvedProducerConfig, resolveProducerConfig } from '../../src/kafka/producer-config.js';
import type { OutgoingRecord, RecordMetadata, SenderStall } from '../../src/runtime/ports.js';
import { FakeKafkajsProducer, kafkajsError, messageTooLarge, retriesExceeded } from '../helpers/fake-kafkajs-producer.js';

interface Outcome {
  calls: number;
  error: Error | undefined;
  metadata: RecordMetadata | undefined;
}

function config(overrides: Record<string, string> = {}): ResolvedProducerConfig {
  const worker: Record<string, string> = {};
  for (const [k, v] of Object.entries(overrides)) worker[`producer.${k}`] = v;
  return resolveProducerConfig(worker, {});
}

function record(value: string, extra: Partial<OutgoingRecord> = {}): OutgoingRecord {
  return { topic: 't', key: null, value: Buffer.from(value), ...extra };
}

/** A sender on a fake producer, and a way to send records whose outcomes are recorded. */
async function setup(overrides: Record<string, string> = {}, queueDepth?: number) {
  const fake = new FakeKafkajsProducer();
  fake.queueDepth = queueDepth;
  const asyncErrors: Error[] = [];
  const events: KafkajsSenderEvent[] = [];
  const sender = new KafkajsSender({
    kafka: fake.kafka(),
    config: config(overrides),
    onAsyncError: (e) => asyncErrors.push(e),
    onEvent: (e) => events.push(e),
  });
  await sender.connect();
  const outcomes: Outcome[] = [];
  const send = (r: OutgoingRecord): Outcome => {
    const o: Outcome = { calls: 0, error: undefined, metadata: undefined };
    outcomes.push(o);
    sender.send(r, (error, metadata) => {
      o.calls++;
      o.error = error;
      o.metadata = metadata;
    });
    return o;
  };
  return { fake, sender, send, outcomes, asyncErrors, events };
}

/**
 * Every record of partitions 0-2 (values `<partition>:<index>`) was acknowledged once, without
 * error, at offsets that grow in send order and point at its own copy in the fake's log.
 */
function expectAckedOnceInSendOrder(fake: FakeKafkajsProducer, outcomes: readonly Outcome[]): void {
  expect(outcomes.every((o) => o.calls === 1 && o.error === undefined)).toBe(true);
  for (const p of [0, 1, 2]) {
    const acked = outcomes.map((o, i) => ({ i, md: o.metadata })).filter((x) => x.md?.partition === p);
    for (let k = 1; k < acked.length; k++) {
      expect(acked[k]!.md!.offset).toBeGreaterThan(acked[k - 1]!.md!.offset);
    }
    const written = fake.values('t', p);
    for (const { i, md } of acked) expect(written[md!.offset]).toBe(`${p}:${i}`);
  }
}

/** Lets promise callbacks run without moving the fake clock. */
async function settle(): Promise<void> {
  await vi.advanceTimersByTimeAsync(0);
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('KafkajsSender batching', () => {
  it('sends a batch as soon as it holds batch.max.records records', async () => {
    const { fake, send } = await setup({
      'batch.max.records': '3',
      'linger.ms': '1000',
      'enable.idempotence': 'false',
      'max.in.flight.requests.per.connection': '5',
    });
    for (let i = 0; i < 7; i++) send(record(`v${i}`));
    expect(fake.calls.map(FakeKafkajsProducer.size)).toEqual([3, 3]);
    await vi.advanceTimersByTimeAsync(999);
    expect(fake.calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(fake.calls.map(FakeKafkajsProducer.size)).toEqual([3, 3, 1]);
  });

  it('sends a batch as soon as its key, value and header bytes reach batch.size', async () => {
    const { fake, send } = await setup({ 'batch.size': '100', 'linger.ms': '1000' });
    const value = 'x'.repeat(30);
    send(record(value, { key: Buffer.from('k') })); // 31
    send(record(value, { headers: { h: Buffer.from('12345') } })); // 30 + 1 + 5 = 36
    expect(fake.calls).toHaveLength(0);
    send(record(value)); // 97
    expect(fake.calls).toHaveLength(0);
    send(record('xxx')); // 100
    expect(fake.calls.map(FakeKafkajsProducer.size)).toEqual([4]);
  });

  it('sends a partial batch after linger.ms, 5 ms by default', async () => {
    const { fake, send } = await setup();
    send(record('a'));
    send(record('b'));
    await vi.advanceTimersByTimeAsync(4);
    expect(fake.calls).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(fake.calls.map(FakeKafkajsProducer.size)).toEqual([2]);
  });

  it('groups a batch by topic for sendBatch with the configured acks, timeout and compression', async () => {
    const { fake, send } = await setup({ acks: 'all', 'request.timeout.ms': '12345', 'compression.type': 'gzip' });
    send(record('a', { topic: 'x' }));
    send(record('b', { topic: 'y' }));
    send(record('c', { topic: 'x' }));
    await vi.advanceTimersByTimeAsync(5);
    const batch = fake.calls[0]?.batch;
    expect(batch?.acks).toBe(-1);
    expect(batch?.timeout).toBe(12345);
    expect(batch?.compression).toBe(1);
    expect(batch?.topicMessages?.map((t) => [t.topic, t.messages.map((m) => String(m.value))])).toEqual([
      ['x', ['a', 'c']],
      ['y', ['b']],
    ]);
  });

  it('gives kafkajs an idempotent producer with one request in flight and a murmur2 partitioner by default', async () => {
    const { fake } = await setup();
    expect(fake.config?.idempotent).toBe(true);
    expect(fake.config?.maxInFlightRequests).toBe(1);
    expect(fake.config?.createPartitioner).toBeTypeOf('function');
    expect(fake.config?.retry?.retries).toBe(5);
  });

  it('holds records sent before connect() and sends them once connected', async () => {
    const fake = new FakeKafkajsProducer();
    const sender = new KafkajsSender({ kafka: fake.kafka(), config: config() });
    sender.send(record('early'), () => {});
    await vi.advanceTimersByTimeAsync(10);
    expect(fake.calls).toHaveLength(0);
    await sender.connect();
    expect(fake.calls).toHaveLength(1);
  });
});

describe('KafkajsSender in-flight limit', () => {
  it('keeps one batch in flight by default and fills the next one meanwhile', async () => {
    const { fake, send } = await setup({ 'batch.max.records': '2' });
    for (let i = 0; i < 3; i++) send(record(`v${i}`));
    await vi.advanceTimersByTimeAsync(5);
    expect(fake.calls).toHaveLength(1);
    send(record('v3'));
    send(record('v4'));
    expect(fake.calls).toHaveLength(1);
    fake.succeed();
    await settle();
    // The batch of v2+v3 went when the slot freed; v4 lingers in a new batch.
    expect(fake.calls.map(FakeKafkajsProducer.size)).toEqual([2, 2]);
    fake.succeed();
    await settle();
    expect(fake.calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(5);
    expect(fake.calls.map(FakeKafkajsProducer.size)).toEqual([2, 2, 1]);
  });

  it('keeps up to max.in.flight.requests.per.connection batches outstanding when idempotence is off', async () => {
    const { fake, send } = await setup({
      'batch.max.records': '1',
      'enable.idempotence': 'false',
      'max.in.flight.requests.per.connection': '3',
    });
    expect(fake.config?.retry?.retries).toBe(0);
    for (let i = 0; i < 5; i++) send(record(`v${i}`));
    expect(fake.open()).toHaveLength(3);
    fake.succeed();
    await settle();
    expect(fake.open()).toHaveLength(3);
    expect(fake.calls).toHaveLength(4);
  });
});

describe('KafkajsSender callbacks', () => {
  it("calls each callback once with topic, partition, base offset + index within the partition, and the record's own timestamp", async () => {
    const { fake, send, outcomes } = await setup({ 'linger.ms': '1' });
    fake.autoAck = true;
    send(record('p1-a', { partition: 1, timestamp: 42 }));
    send(record('p0-a', { partition: 0 }));
    send(record('p1-b', { partition: 1 }));
    await vi.advanceTimersByTimeAsync(1);
    send(record('p1-c', { partition: 1 }));
    await vi.advanceTimersByTimeAsync(1);
    expect(outcomes.map((o) => o.calls)).toEqual([1, 1, 1, 1]);
    expect(outcomes.map((o) => o.metadata)).toEqual([
      { topic: 't', partition: 1, offset: 0, timestamp: 42 },
      // Stamped by kafkajs as it encodes the request: the sender does not know the value.
      { topic: 't', partition: 0, offset: 0, timestamp: undefined },
      { topic: 't', partition: 1, offset: 1, timestamp: undefined },
      { topic: 't', partition: 1, offset: 2, timestamp: undefined },
    ]);
  });

  it('hands kafkajs a record without headers or timestamp as key, value and partition only, so kafkajs stamps it', async () => {
    const { fake, send } = await setup();
    send(record('plain'));
    send(record('keyed', { key: Buffer.from('k'), partition: 1 }));
    send(record('stamped', { timestamp: 42 }));
    send(record('headed', { headers: { h: 'x' } }));
    await vi.advanceTimersByTimeAsync(5);
    const messages = fake.calls[0]?.batch.topicMessages?.[0]?.messages ?? [];
    // kafkajs maps, filters and string-sorts a partition's timestamps on every request when any
    // message has one, and copies every field of every message: absent fields cost nothing.
    expect(messages.map((m) => Object.keys(m).sort())).toEqual([
      ['key', 'partition', 'value'],
      ['key', 'partition', 'value'],
      ['headers', 'key', 'partition', 'timestamp', 'value'],
      ['headers', 'key', 'partition', 'timestamp', 'value'],
    ]);
    expect(messages.map((m) => [m.timestamp, m.headers])).toEqual([
      [undefined, undefined],
      [undefined, undefined],
      [42, undefined],
      [undefined, { h: 'x' }],
    ]);
    expect(messages[1]?.partition).toBe(1);
  });

  it('reports the partition the partitioner chose for keyless and keyed records', async () => {
    const { fake, send, outcomes } = await setup();
    fake.autoAck = true;
    fake.partitions = 4;
    for (let i = 0; i < 8; i++) send(record(`v${i}`));
    send(record('keyed', { key: Buffer.from('customer-17') }));
    await vi.advanceTimersByTimeAsync(5);
    const partitions = outcomes.map((o) => o.metadata?.partition);
    expect(new Set(partitions.slice(0, 8))).toEqual(new Set([0, 1, 2, 3]));
    expect(outcomes.every((o) => o.metadata !== undefined && o.metadata.offset >= 0)).toBe(true);
    // Java's murmur2 of the key modulo the partition count, as kafkajs's DefaultPartitioner has it.
    const partitionMetadata = [0, 1, 2, 3].map((partitionId) => ({
      partitionId,
      leader: 0,
      partitionErrorCode: 0,
      replicas: [0],
      isr: [0],
    }));
    const expected = Partitioners.DefaultPartitioner()({
      topic: 't',
      partitionMetadata,
      message: { key: Buffer.from('customer-17'), value: null },
    });
    expect(partitions[8]).toBe(expected);
    expect(fake.values('t', expected)).toContain('keyed');
  });

  it('reports offset -1 when acks=0 gives no offsets', async () => {
    const { fake, send, outcomes } = await setup({ acks: '0' });
    send(record('a', { partition: 2 }));
    await vi.advanceTimersByTimeAsync(5);
    const call = fake.open()[0];
    if (call === undefined) throw new Error('expected a sendBatch call');
    call.settled = true;
    call.resolve([]);
    await settle();
    expect(outcomes[0]?.metadata).toEqual({ topic: 't', partition: 2, offset: -1, timestamp: undefined });
  });

  it('still calls every other callback when one throws, and reports the throw', async () => {
    const { fake, sender, asyncErrors } = await setup();
    fake.autoAck = true;
    const seen: string[] = [];
    sender.send(record('a'), () => seen.push('a'));
    sender.send(record('b'), () => {
      seen.push('b');
      throw new Error('callback bug');
    });
    sender.send(record('c'), () => seen.push('c'));
    await vi.advanceTimersByTimeAsync(5);
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(asyncErrors.map((e) => e.message)).toEqual(['callback bug']);
    expect(sender.pending).toBe(0);
  });
});

describe('KafkajsSender failures', () => {
  it('re-sends a batch that failed with a transient error, before later batches, and acknowledges it once', async () => {
    const { fake, send, outcomes, events } = await setup({ 'batch.max.records': '2' });
    send(record('a', { partition: 0 }));
    send(record('b', { partition: 0 }));
    send(record('c', { partition: 0 }));
    send(record('d', { partition: 0 }));
    expect(fake.calls).toHaveLength(1);
    fake.fail(retriesExceeded());
    await settle();
    expect(events.map((e) => e.type)).toEqual(['retry']);
    expect(fake.open()).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(100); // retry.backoff.ms
    expect(fake.calls).toHaveLength(2);
    // The same message objects go again, first.
    expect(fake.calls[1]?.batch.topicMessages?.[0]?.messages).toBe(fake.calls[0]?.batch.topicMessages?.[0]?.messages);
    fake.succeed();
    await settle();
    fake.succeed();
    await settle();
    expect(fake.values('t', 0)).toEqual(['a', 'b', 'c', 'd']);
    expect(outcomes.map((o) => [o.calls, o.error, o.metadata?.offset])).toEqual([
      [1, undefined, 0],
      [1, undefined, 1],
      [1, undefined, 2],
      [1, undefined, 3],
    ]);
  });

  it('keeps keyless records in the partition of their first attempt when re-sending', async () => {
    const { fake, send, outcomes } = await setup();
    for (let i = 0; i < 6; i++) send(record(`v${i}`));
    await vi.advanceTimersByTimeAsync(5);
    const first = fake.calls[0]?.batch.topicMessages?.[0]?.messages.map((m) => m.partition);
    fake.fail(retriesExceeded());
    await vi.advanceTimersByTimeAsync(100);
    const second = fake.calls[1]?.batch.topicMessages?.[0]?.messages.map((m) => m.partition);
    expect(second).toEqual(first);
    fake.succeed();
    await settle();
    expect(outcomes.map((o) => o.metadata?.partition)).toEqual(first);
  });

  it('backs off exponentially from retry.backoff.ms up to retry.backoff.max.ms between re-sends', async () => {
    const { fake, send, events } = await setup({ 'retry.backoff.ms': '100', 'retry.backoff.max.ms': '300' });
    send(record('a'));
    await vi.advanceTimersByTimeAsync(5);
    for (let i = 0; i < 4; i++) {
      fake.fail(retriesExceeded());
      await settle();
      const e = events.at(-1);
      await vi.advanceTimersByTimeAsync(e?.type === 'retry' ? e.delayMs : 0);
    }
    expect(events.map((e) => (e.type === 'retry' ? e.delayMs : -1))).toEqual([100, 200, 300, 300]);
    expect(events.map((e) => (e.type === 'retry' ? e.requests : -1))).toEqual([6, 12, 18, 24]);
  });

  it('fails every record of the batch with SEND_FAILED once delivery.timeout.ms has passed', async () => {
    const { fake, send, outcomes } = await setup({ 'delivery.timeout.ms': '40000', 'request.timeout.ms': '30000' });
    send(record('a', { topic: 'orders' }));
    send(record('b', { topic: 'orders' }));
    await vi.advanceTimersByTimeAsync(5);
    let rounds = 0;
    while (outcomes.some((o) => o.calls === 0) && rounds < 100) {
      await vi.advanceTimersByTimeAsync(3000); // kafkajs's own retries take a while
      fake.fail(retriesExceeded());
      await vi.advanceTimersByTimeAsync(1000);
      rounds++;
    }
    expect(rounds).toBeGreaterThan(5);
    expect(Date.now() - 1_700_000_000_000).toBeLessThanOrEqual(41_000);
    for (const o of outcomes) {
      expect(o.calls).toBe(1);
      expect(isTributaryError(o.error) && o.error.code).toBe('SEND_FAILED');
      expect(o.error?.message).toContain("topic 'orders'");
      expect(o.error?.message).toContain('delivery.timeout.ms=40000');
      expect(o.error?.message).toContain('bootstrap.servers');
      expect(o.error?.message).toMatch(/gave up after \d+ ms and \d+ request/);
      expect((o.error?.cause as Error | undefined)?.name).toBe('KafkaJSNumberOfRetriesExceeded');
    }
    // The same error object for the batch.
    expect(outcomes[0]?.error).toBe(outcomes[1]?.error);
  });

  it('fails a batch at once on an error that is not transient', async () => {
    const { fake, send, outcomes, events } = await setup();
    send(record('big'));
    await vi.advanceTimersByTimeAsync(5);
    fake.fail(messageTooLarge());
    await settle();
    expect(events.map((e) => e.type)).toEqual(['failed', 'producer-replaced']);
    expect(outcomes[0]?.calls).toBe(1);
    expect(outcomes[0]?.error?.message).toMatch(/Kafka refused 1 record\(s\) for topic 't'.*not a transient error/);
    expect(outcomes[0]?.error?.message).toContain('max.message.bytes');
    expect(fake.calls).toHaveLength(1);
  });

  it('re-sends only the partitions kafkajs reported written without an offset (tulios/kafkajs#1303)', async () => {
    const { fake, sender, send, outcomes, events } = await setup();
    const stalls: Array<SenderStall | undefined> = [];
    sender.onStall((s) => stalls.push(s));
    const sentAt = Date.now();
    send(record('a0', { partition: 0 }));
    send(record('a1', { partition: 1 }));
    send(record('b0', { partition: 0 }));
    send(record('b1', { partition: 1 }));
    await vi.advanceTimersByTimeAsync(5);
    fake.succeed(fake.open()[0], [1]);
    await settle();
    expect(outcomes.map((o) => o.calls)).toEqual([1, 0, 1, 0]);
    expect(events.map((e) => e.type)).toEqual(['retry']);
    const retry = events[0];
    expect(retry?.type === 'retry' && String(retry.error)).toContain('no offset for t/1 (tulios/kafkajs#1303)');
    // The part sent again is reported as waiting since its batch went out, not since 1970.
    expect(stalls[0]?.since).toBeGreaterThanOrEqual(sentAt);
    expect(stalls[0]?.durationMs).toBeLessThan(60_000);
    send(record('c1', { partition: 1 })); // must not overtake a1 and b1
    await vi.advanceTimersByTimeAsync(100);
    expect(fake.calls).toHaveLength(2);
    expect(fake.calls[1]?.batch.topicMessages?.[0]?.messages.map((m) => String(m.value))).toEqual(['a1', 'b1']);
    fake.succeed();
    await vi.advanceTimersByTimeAsync(5);
    fake.succeed();
    await settle();
    expect(fake.values('t', 0)).toEqual(['a0', 'b0']);
    expect(fake.values('t', 1)).toEqual(['a1', 'b1', 'c1']);
    expect(outcomes.map((o) => [o.calls, o.metadata?.partition, o.metadata?.offset])).toEqual([
      [1, 0, 0],
      [1, 1, 0],
      [1, 0, 1],
      [1, 1, 1],
      [1, 1, 2],
    ]);
  });

  it('stops after retries re-sends', async () => {
    const { fake, send, outcomes } = await setup({ retries: '7' });
    send(record('a'));
    await vi.advanceTimersByTimeAsync(5);
    expect(fake.config?.retry?.retries).toBe(5);
    fake.fail(retriesExceeded()); // 6 requests
    await vi.advanceTimersByTimeAsync(100);
    fake.fail(retriesExceeded()); // 12 requests > 7
    await settle();
    expect(outcomes[0]?.error?.message).toContain('retries=7 is used up');
  });

  it('fails batches that waited past delivery.timeout.ms behind a retried batch without sending them', async () => {
    const { fake, send, outcomes } = await setup({ 'delivery.timeout.ms': '30005', 'batch.max.records': '1' });
    send(record('a'));
    await vi.advanceTimersByTimeAsync(1);
    send(record('b'));
    // a's request hangs past both deadlines (kafkajs can take that long: tulios/kafkajs#1749)...
    await vi.advanceTimersByTimeAsync(31_000);
    fake.fail(retriesExceeded());
    await settle();
    expect(outcomes[0]?.error?.message).toContain('delivery.timeout.ms=30005 would pass');
    // ...so b, queued behind it, is failed without being sent.
    expect(outcomes[1]?.error?.message).toMatch(/not sent within delivery.timeout.ms=30005/);
    expect(
      fake.calls.every(
        (c) => FakeKafkajsProducer.size(c) === 1 && String(c.batch.topicMessages?.[0]?.messages[0]?.value) === 'a',
      ),
    ).toBe(true);
  });
});

describe('KafkajsSender after giving up, and during outages', () => {
  it('sends no batch on the producer of a batch it gave up on: later batches go out on a fresh producer', async () => {
    const { fake, send, outcomes, events } = await setup({ 'delivery.timeout.ms': '30005' });
    send(record('lost-answer', { partition: 0 }));
    await vi.advanceTimersByTimeAsync(20_000);
    send(record('later', { partition: 0 }));
    await vi.advanceTimersByTimeAsync(11_000);
    // The broker wrote it, the answer was lost; kafkajs rolled the sequence numbers back.
    fake.fail(retriesExceeded(), undefined, true);
    await vi.advanceTimersByTimeAsync(10);
    expect(outcomes[0]?.error?.message).toContain('delivery.timeout.ms=30005');
    expect(fake.producers).toBe(2);
    expect(fake.disconnects).toBe(1);
    expect(events.map((e) => e.type)).toEqual(['failed', 'producer-replaced']);
    const later = fake.calls.filter((c) => c.batch.topicMessages?.[0]?.messages.some((m) => String(m.value) === 'later'));
    expect(later.map((c) => c.connection)).toEqual([2]);
    fake.succeed();
    await settle();
    expect(outcomes[1]?.metadata?.offset).toBe(1);
  });

  it('replaces the producer when a sent batch waiting for its re-send passes delivery.timeout.ms (a late back-off timer)', async () => {
    const { fake, send, outcomes, events } = await setup({ 'delivery.timeout.ms': '30005' });
    send(record('lost-answer', { partition: 0 }));
    await vi.advanceTimersByTimeAsync(5);
    // Written, answer lost: the sender schedules a re-send 100 ms later, well within the deadline.
    fake.fail(retriesExceeded(), undefined, true);
    await settle();
    expect(events.map((e) => e.type)).toEqual(['retry']);
    // The back-off timer fires late, past the deadline (a busy event loop, a GC pause, a suspended VM).
    vi.setSystemTime(Date.now() + 31_000);
    send(record('later', { partition: 0 }));
    await vi.advanceTimersByTimeAsync(200);
    expect(outcomes[0]?.error?.message).toContain('delivery.timeout.ms=30005 passed before they could be sent again');
    expect(outcomes[0]?.error?.message).toContain('may or may not have been written');
    // kafkajs rolled the sequence numbers of 'lost-answer' back: 'later', of the same size, must
    // not go out on that producer, or the broker takes it for a duplicate and it is never written.
    const later = fake.calls.filter((c) => c.batch.topicMessages?.[0]?.messages.some((m) => String(m.value) === 'later'));
    expect(later.map((c) => c.connection)).toEqual([2]);
    expect(events.map((e) => e.type)).toEqual(['retry', 'failed', 'producer-replaced']);
    fake.succeed();
    await settle();
    expect(outcomes[1]?.metadata?.offset).toBe(1);
  });

  it('replaces the producer too when the records kafkajs left without an offset expire before their re-send', async () => {
    const { fake, send, outcomes, events } = await setup({ 'delivery.timeout.ms': '30005' });
    send(record('a0', { partition: 0 }));
    send(record('a1', { partition: 1 }));
    await vi.advanceTimersByTimeAsync(5);
    fake.succeed(fake.open()[0], [1]);
    await settle();
    vi.setSystemTime(Date.now() + 31_000);
    send(record('later', { partition: 1 }));
    await vi.advanceTimersByTimeAsync(200);
    expect(outcomes.map((o) => o.calls)).toEqual([1, 1, 0]);
    expect(outcomes[1]?.error?.message).toContain('delivery.timeout.ms=30005');
    const later = fake.calls.filter((c) => c.batch.topicMessages?.[0]?.messages.some((m) => String(m.value) === 'later'));
    expect(later.map((c) => c.connection)).toEqual([2]);
    expect(events.map((e) => e.type)).toEqual(['retry', 'failed', 'producer-replaced']);
  });

  it('holds later batches while the fresh producer cannot connect, failing those that wait past delivery.timeout.ms', async () => {
    const { fake, send, outcomes } = await setup({ 'delivery.timeout.ms': '30005' });
    send(record('a'));
    await vi.advanceTimersByTimeAsync(5);
    fake.connectErrors.push(...Array.from({ length: 100 }, () => retriesExceeded()));
    fake.fail(messageTooLarge());
    await settle();
    send(record('b'));
    await vi.advanceTimersByTimeAsync(31_000);
    expect(outcomes[0]?.error?.message).toContain('not a transient error');
    expect(outcomes[1]?.error?.message).toMatch(/not sent within delivery.timeout.ms=30005/);
    expect(fake.calls).toHaveLength(1);
  });

  it('close() while the fresh producer cannot connect fails the held records and stops trying', async () => {
    const { fake, sender, send, outcomes } = await setup();
    send(record('a'));
    await vi.advanceTimersByTimeAsync(5);
    fake.connectErrors.push(...Array.from({ length: 100 }, () => retriesExceeded()));
    fake.fail(messageTooLarge());
    send(record('b'));
    await vi.advanceTimersByTimeAsync(3000);
    const producers = fake.producers;
    expect(producers).toBeGreaterThan(2);
    await sender.close();
    expect(outcomes[1]?.calls).toBe(1);
    expect(outcomes[1]?.error?.message).toContain('closed before 1 record(s)');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(fake.producers).toBe(producers);
    expect(fake.calls).toHaveLength(1);
  });

  it('close() while the fresh producer is still connecting leaves no producer connected', async () => {
    const { fake, sender, send } = await setup();
    send(record('a'));
    await vi.advanceTimersByTimeAsync(5);
    let connected!: () => void;
    fake.connectGate = new Promise((resolve) => {
      connected = resolve;
    });
    fake.fail(messageTooLarge());
    await settle();
    expect(fake.producers).toBe(2);
    await sender.close();
    // The fresh producer's connection completes after close() disconnected it.
    fake.connectGate = undefined;
    connected();
    await settle();
    expect(fake.connects).toBe(2);
    expect(fake.connected).toBe(false);
  });

  it('close() while connect() is under way leaves the producer disconnected', async () => {
    const fake = new FakeKafkajsProducer();
    const sender = new KafkajsSender({ kafka: fake.kafka(), config: config() });
    let connected!: () => void;
    fake.connectGate = new Promise((resolve) => {
      connected = resolve;
    });
    const connecting = sender.connect();
    await sender.close();
    fake.connectGate = undefined;
    connected();
    await connecting;
    expect(fake.connects).toBe(1);
    expect(fake.connected).toBe(false);
  });

  it('retries a batch in order until Kafka answers when delivery.timeout.ms is not set, however long the outage', async () => {
    const { fake, send, outcomes } = await setup();
    send(record('a', { partition: 0 }));
    await vi.advanceTimersByTimeAsync(5);
    send(record('b', { partition: 0 }));
    for (let i = 0; i < 300; i++) {
      await vi.advanceTimersByTimeAsync(3000);
      fake.fail(retriesExceeded());
      await vi.advanceTimersByTimeAsync(1000);
    }
    expect(Date.now() - 1_700_000_000_000).toBeGreaterThan(20 * 60_000);
    expect(outcomes.map((o) => o.calls)).toEqual([0, 0]);
    fake.succeed();
    await vi.advanceTimersByTimeAsync(10);
    fake.succeed();
    await settle();
    expect(outcomes.map((o) => [o.calls, o.error, o.metadata?.offset])).toEqual([
      [1, undefined, 0],
      [1, undefined, 1],
    ]);
    expect(fake.values('t', 0)).toEqual(['a', 'b']);
  });

  it('reports a stall at the first re-send, again while it lasts, and its end once a batch is acknowledged', async () => {
    const { fake, sender, send } = await setup();
    const stalls: Array<{ durationMs: number; reason: string } | undefined> = [];
    sender.onStall((s) => stalls.push(s));
    send(record('a'));
    await vi.advanceTimersByTimeAsync(5);
    const dispatchedAt = Date.now();
    await vi.advanceTimersByTimeAsync(2000);
    fake.fail(retriesExceeded());
    await settle();
    expect(stalls).toHaveLength(1);
    expect(stalls[0]).toMatchObject({ since: dispatchedAt, durationMs: 2000 });
    expect(stalls[0]?.reason).toContain('ECONNREFUSED');
    for (let i = 0; i < 4; i++) {
      await vi.advanceTimersByTimeAsync(3000);
      fake.fail(retriesExceeded());
    }
    await settle();
    const durations = stalls.map((s) => s?.durationMs ?? -1);
    expect(durations.length).toBeGreaterThan(2);
    expect(durations).toEqual([...durations].sort((x, y) => x - y));
    expect(durations.at(-1)).toBeGreaterThanOrEqual(12_000);
    await vi.advanceTimersByTimeAsync(1000);
    fake.succeed();
    await settle();
    expect(stalls.at(-1)).toBeUndefined();
  });

  it('reports a stall when a request goes unanswered for request.timeout.ms, as with a frozen broker', async () => {
    const { sender, send } = await setup({ 'request.timeout.ms': '5000' });
    const stalls: Array<{ since: number; reason: string } | undefined> = [];
    sender.onStall((s) => stalls.push(s));
    send(record('a'));
    await vi.advanceTimersByTimeAsync(5);
    const dispatchedAt = Date.now();
    await vi.advanceTimersByTimeAsync(4000);
    expect(stalls).toEqual([]);
    await vi.advanceTimersByTimeAsync(2000);
    expect(stalls).toHaveLength(1);
    expect(stalls[0]).toMatchObject({ since: dispatchedAt, reason: 'no answer from Kafka within request.timeout.ms=5000' });
  });
});

describe('KafkajsSender ordering with several batches in flight', () => {
  it('re-sends the failed batch and every later one in order, so acknowledged copies stay in order', async () => {
    const { fake, send, outcomes } = await setup({
      'batch.max.records': '1',
      'enable.idempotence': 'false',
      'max.in.flight.requests.per.connection': '3',
    });
    for (const v of ['a', 'b', 'c']) send(record(v, { partition: 0 }));
    const [ca, cb, cc] = fake.open();
    fake.succeed(cb); // b lands before a fails
    fake.fail(retriesExceeded(), ca);
    await settle();
    expect(fake.calls).toHaveLength(3); // waits for c to settle
    fake.succeed(cc);
    await vi.advanceTimersByTimeAsync(100);
    expect(fake.open().map((c) => String(c.batch.topicMessages?.[0]?.messages[0]?.value))).toEqual(['a', 'b', 'c']);
    for (const c of fake.open()) fake.succeed(c);
    await settle();
    expect(fake.values('t', 0)).toEqual(['b', 'c', 'a', 'b', 'c']);
    expect(outcomes.map((o) => [o.calls, o.metadata?.offset])).toEqual([
      [1, 2],
      [1, 3],
      [1, 4],
    ]);
  });

  it('re-sends a batch that kafkajs wrote after a later one, so acknowledged offsets follow send order', async () => {
    const { fake, send, outcomes, events } = await setup({
      'batch.max.records': '1',
      'enable.idempotence': 'false',
      'max.in.flight.requests.per.connection': '2',
    });
    send(record('a', { partition: 0 }));
    send(record('b', { partition: 0 }));
    const [ca, cb] = fake.open();
    fake.succeed(cb); // b overtook a on the wire
    fake.succeed(ca);
    await settle();
    expect(events.map((e) => e.type)).toEqual(['reordered']);
    expect(outcomes[0]?.metadata?.offset).toBe(1);
    expect(outcomes[1]?.calls).toBe(0);
    fake.succeed();
    await settle();
    expect(fake.values('t', 0)).toEqual(['b', 'a', 'b']);
    expect(outcomes.map((o) => [o.calls, o.metadata?.offset])).toEqual([
      [1, 1],
      [1, 2],
    ]);
  });

  it('does not take a partition that restarts from offset 0 for overtaking', async () => {
    const { fake, send, outcomes, events } = await setup({
      'batch.max.records': '1',
      'enable.idempotence': 'false',
      'max.in.flight.requests.per.connection': '2',
    });
    send(record('a', { partition: 0 }));
    fake.succeed();
    await settle();
    fake.log.clear(); // topic deleted and created again
    send(record('b', { partition: 0 }));
    fake.succeed();
    await settle();
    expect(events).toEqual([]);
    expect(outcomes.map((o) => o.metadata?.offset)).toEqual([0, 0]);
  });

  it('acknowledges every record once, in send order per partition, under any mix of failures (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 30 }),
        // 'ok'/'fail'/'fail-written' settle the oldest open call; 'later-fail' and 'later-ok'
        // the newest: kafkajs may put a later batch on the wire first.
        // 'partial': kafkajs resolves without having sent the call's highest partition (#1303).
        fc.array(fc.constantFrom('ok', 'ok', 'fail', 'fail-written', 'later-fail', 'later-ok', 'partial'), {
          minLength: 1,
          maxLength: 200,
        }),
        async (inFlight, maxRecords, partitions, script) => {
          const { fake, send, outcomes } = await setup({
            'batch.max.records': String(maxRecords),
            'enable.idempotence': inFlight > 1 ? 'false' : 'true',
            'max.in.flight.requests.per.connection': String(inFlight),
            'delivery.timeout.ms': '1000000000',
          });
          partitions.forEach((p, i) => {
            send(record(`${p}:${i}`, { partition: p }));
          });
          let step = 0;
          for (let guard = 0; guard < 2000 && outcomes.some((o) => o.calls === 0); guard++) {
            await vi.advanceTimersByTimeAsync(5);
            const open = fake.open();
            if (open.length === 0) {
              await vi.advanceTimersByTimeAsync(1000);
              continue;
            }
            const action = step < script.length ? script[step] : 'ok';
            step++;
            const target = action?.startsWith('later') ? open.at(-1) : open[0];
            if (action === 'fail' || action === 'later-fail') fake.fail(retriesExceeded(), target);
            else if (action === 'fail-written') fake.fail(retriesExceeded(), target, true);
            else if (action === 'partial' && target !== undefined)
              fake.succeed(target, FakeKafkajsProducer.partitionsOf(target).slice(-1));
            else fake.succeed(target);
          }
          expectAckedOnceInSendOrder(fake, outcomes);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('KafkajsSender on a queueing producer (the producer thread, one request in flight)', () => {
  it('hands over the next batch while one is out, and no more', async () => {
    const { fake, send } = await setup({ 'batch.max.records': '2' }, 2);
    for (let i = 0; i < 8; i++) send(record(`v${i}`, { partition: 0 }));
    expect(fake.calls.map(FakeKafkajsProducer.size)).toEqual([2, 2]);
    fake.succeed();
    await settle();
    expect(fake.calls.map(FakeKafkajsProducer.size)).toEqual([2, 2, 2]);
    expect(fake.open()).toHaveLength(2);
  });

  it('re-sends a failed batch, then the one queued behind it (not attempted), in order, counting no retry for it', async () => {
    const { fake, send, outcomes } = await setup({ 'batch.max.records': '2', retries: '1' }, 2);
    const connectionLost = () => kafkajsError('KafkaJSConnectionError', 'Connection error: read ECONNRESET');
    for (let i = 0; i < 4; i++) send(record(`v${i}`, { partition: 0 }));
    fake.fail(connectionLost());
    await vi.advanceTimersByTimeAsync(1000);
    // The first batch again, then the second.
    const sent = () => fake.calls.map((c) => c.batch.topicMessages?.[0]?.messages.map((m) => String(m.value)));
    expect(sent()).toEqual([
      ['v0', 'v1'],
      ['v2', 'v3'],
      ['v0', 'v1'],
      ['v2', 'v3'],
    ]);
    fake.succeed();
    await settle();
    // Its "not attempted" answer used none of retries=1: a real failure now is still re-sent.
    fake.fail(connectionLost());
    await vi.advanceTimersByTimeAsync(1000);
    expect(sent()).toHaveLength(5);
    fake.succeed();
    await settle();
    expect(outcomes.map((o) => [o.calls, o.error?.message, o.metadata?.offset])).toEqual([
      [1, undefined, 0],
      [1, undefined, 1],
      [1, undefined, 2],
      [1, undefined, 3],
    ]);
  });

  it('after a batch fails for good, sends the one queued behind it again rather than failing it', async () => {
    const { fake, send, outcomes } = await setup({ 'batch.max.records': '2' }, 2);
    for (let i = 0; i < 4; i++) send(record(`v${i}`, { partition: 0 }));
    fake.fail(messageTooLarge());
    await vi.advanceTimersByTimeAsync(1000);
    fake.succeed();
    await settle();
    expect(outcomes.map((o) => o.error === undefined)).toEqual([false, false, true, true]);
    expect(fake.values('t', 0)).toEqual(['v2', 'v3']);
  });

  it('sends a batch that a gone producer refused (not attempted) again on a fresh producer, idempotent or not', async () => {
    for (const idempotence of ['true', 'false']) {
      const { fake, send, outcomes } = await setup({ 'enable.idempotence': idempotence }, 2);
      send(record('a', { partition: 0 }));
      await vi.advanceTimersByTimeAsync(5);
      const producers = fake.producers;
      fake.fail(
        Object.assign(new Error('not sent: the kafkajs producer thread exited (code 1)'), {
          notAttempted: true,
          producerGone: true,
        }),
      );
      await vi.advanceTimersByTimeAsync(5);
      expect(fake.producers).toBe(producers + 1);
      fake.succeed();
      await settle();
      expect(outcomes.map((o) => [o.calls, o.error, o.metadata?.offset])).toEqual([[1, undefined, 0]]);
    }
  });

  it('says a batch that was only ever answered "not attempted" and then expired was not sent', async () => {
    const { fake, send, outcomes } = await setup({ 'batch.max.records': '1', 'delivery.timeout.ms': '30005' }, 2);
    send(record('a', { partition: 0 }));
    send(record('b', { partition: 0 }));
    await settle();
    expect(fake.open()).toHaveLength(2);
    // a fails for good; b, queued behind it, comes back "not attempted" and waits for a fresh producer that cannot connect.
    fake.connectErrors.push(...Array.from({ length: 100 }, () => retriesExceeded()));
    fake.fail(messageTooLarge());
    await vi.advanceTimersByTimeAsync(31_000);
    expect(outcomes[0]?.error?.message).toContain('not a transient error');
    expect(outcomes[1]?.error?.message).toMatch(/not sent within delivery.timeout.ms=30005/);
    expect(fake.calls).toHaveLength(2);
  });

  it('acknowledges every record once, in send order per partition, under any mix of failures (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        // Calls the producer takes at once: one on the wire, the rest queued behind it.
        fc.integer({ min: 2, max: 5 }),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 30 }),
        // Each settles the oldest open call, the only one such a producer can be writing.
        fc.array(fc.constantFrom('ok', 'ok', 'fail', 'fail-written', 'partial'), { minLength: 1, maxLength: 200 }),
        async (maxRecords, depth, partitions, script) => {
          const { fake, send, outcomes } = await setup(
            { 'batch.max.records': String(maxRecords), 'delivery.timeout.ms': '1000000000' },
            depth,
          );
          partitions.forEach((p, i) => {
            send(record(`${p}:${i}`, { partition: p }));
          });
          let step = 0;
          for (let guard = 0; guard < 2000 && outcomes.some((o) => o.calls === 0); guard++) {
            await vi.advanceTimersByTimeAsync(5);
            expect(fake.open().length).toBeLessThanOrEqual(depth);
            const target = fake.open()[0];
            if (target === undefined) {
              await vi.advanceTimersByTimeAsync(1000);
              continue;
            }
            const action = step < script.length ? script[step] : 'ok';
            step++;
            if (action === 'fail') fake.fail(retriesExceeded(), target);
            else if (action === 'fail-written') fake.fail(retriesExceeded(), target, true);
            else if (action === 'partial') fake.succeed(target, FakeKafkajsProducer.partitionsOf(target).slice(-1));
            else fake.succeed(target);
          }
          expectAckedOnceInSendOrder(fake, outcomes);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('KafkajsSender flush and close', () => {
  it('flush() sends the lingering batch at once and resolves only after every callback ran', async () => {
    const { fake, sender, send, outcomes } = await setup({ 'linger.ms': '10000' });
    send(record('a'));
    send(record('b'));
    let flushed = false;
    const flushing = sender.flush().then(() => {
      flushed = true;
    });
    await settle();
    expect(fake.calls).toHaveLength(1);
    send(record('after flush'));
    expect(flushed).toBe(false);
    fake.succeed();
    await flushing;
    expect(outcomes.slice(0, 2).every((o) => o.calls === 1)).toBe(true);
    expect(sender.pending).toBe(1);
  });

  it('flush() resolves at once when nothing is outstanding', async () => {
    const { sender } = await setup();
    await expect(sender.flush()).resolves.toBeUndefined();
  });

  it('flush() waits through re-sends and resolves once the records are acknowledged or failed', async () => {
    const { fake, sender, send, outcomes } = await setup();
    send(record('a'));
    let flushed = false;
    const flushing = sender.flush().then(() => {
      flushed = true;
    });
    await settle();
    fake.fail(retriesExceeded());
    await vi.advanceTimersByTimeAsync(100);
    expect(flushed).toBe(false);
    fake.succeed();
    await flushing;
    expect(outcomes[0]?.error).toBeUndefined();
  });

  it('close() fails held and in-flight records, disconnects, and ignores what kafkajs reports later', async () => {
    const { fake, sender, send, outcomes } = await setup({ 'batch.max.records': '1' });
    send(record('in flight'));
    send(record('held'));
    const call = fake.open()[0];
    await sender.close();
    expect(fake.disconnects).toBe(1);
    expect(outcomes.map((o) => o.calls)).toEqual([1, 1]);
    expect(outcomes[0]?.error?.message).toMatch(/closed before 1 record\(s\) for topic 't' were acknowledged/);
    fake.succeed(call);
    await settle();
    expect(outcomes[0]?.calls).toBe(1);
    const late = send(record('late'));
    expect(late.calls).toBe(0); // not synchronously
    await settle();
    expect(late.calls).toBe(1);
    expect(isTributaryError(late.error) && late.error.code).toBe('SEND_FAILED');
    await expect(sender.flush()).resolves.toBeUndefined();
    await sender.close();
    expect(fake.disconnects).toBe(1);
  });

  it('close() also fails the records of the batch still filling, and a flush() waiting for them resolves', async () => {
    const { fake, sender, send, outcomes } = await setup({ 'linger.ms': '1000' });
    send(record('in flight'));
    await vi.advanceTimersByTimeAsync(1000);
    send(record('filling')); // waits for the slot, in the open batch
    const flushed = sender.flush();
    expect(fake.calls).toHaveLength(1);
    await sender.close();
    expect(outcomes.map((o) => o.calls)).toEqual([1, 1]);
    expect(outcomes[1]?.error?.message).toMatch(/closed before 1 record\(s\)/);
    await expect(flushed).resolves.toBeUndefined();
  });

  it('close() after flush() has nothing to fail', async () => {
    const { fake, sender, send, outcomes } = await setup();
    fake.autoAck = true;
    send(record('a'));
    await sender.flush();
    await sender.close();
    expect(outcomes[0]).toMatchObject({ calls: 1, error: undefined });
  });
});
