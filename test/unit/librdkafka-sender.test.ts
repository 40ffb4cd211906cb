import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  LibrdkafkaSender,
  librdkafkaConfig,
  type RdkafkaDeliveryReport,
  type RdkafkaError,
  type RdkafkaProducerLike,
} from '../../src/kafka/librdkafka-sender.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';
import type { RecordMetadata, SenderStall } from '../../src/runtime/ports.js';

/** A fake librdkafka producer whose queue holds `capacity` records until `deliver()`. */
class FakeProducer implements RdkafkaProducerLike {
  queue: Array<{ topic: string; opaque: unknown }> = [];
  private report: ((error: Error | null, report: RdkafkaDeliveryReport) => void) | undefined;
  /** The sender's `event.error` listener: librdkafka's errors outside any record. */
  clientError: ((error: RdkafkaError) => void) | undefined;
  /** What close() asked of the client, in order. */
  calls: string[] = [];
  /** What flush() answers: librdkafka's "Local: Timed out" when records are still undelivered. */
  flushError: Error | null = null;
  /** Runs once flush() has called back: the binding's delivery reports come on later turns. */
  afterFlush: (() => void) | undefined;
  constructor(private readonly capacity: number) {}
  connect(_o: object, cb: (e: Error | null) => void) {
    cb(null);
  }
  disconnect(cb: () => void) {
    this.calls.push('disconnect');
    cb();
  }
  setPollInterval(ms: number) {
    this.calls.push(`setPollInterval(${ms})`);
  }
  flush(_t: number, cb: (e: Error | null) => void) {
    this.calls.push('flush');
    cb(this.flushError);
    this.afterFlush?.();
  }
  on(event: 'delivery-report', listener: (error: Error | null, report: RdkafkaDeliveryReport) => void): void;
  on(event: 'event.error', listener: (error: RdkafkaError) => void): void;
  on(event: string, listener: ((error: Error | null, report: RdkafkaDeliveryReport) => void) | ((error: RdkafkaError) => void)) {
    if (event === 'delivery-report') this.report = listener as (error: Error | null, report: RdkafkaDeliveryReport) => void;
    if (event === 'event.error') this.clientError = listener as (error: RdkafkaError) => void;
  }
  produce(topic: string, _p: number | null, _v: Buffer | null, _k: Buffer | null, _t: number | null, opaque: unknown) {
    if (topic === 'bad') throw Object.assign(new Error('Broker: unknown topic'), { code: 3 });
    if (this.queue.length >= this.capacity) throw Object.assign(new Error('Local: Queue full'), { code: -184 });
    this.queue.push({ topic, opaque });
  }
  deliver(error: Error | null = null) {
    const m = this.queue.shift();
    if (m) this.report?.(error, { topic: m.topic, partition: 0, offset: 7, opaque: m.opaque });
  }
}

describe('LibrdkafkaSender', () => {
  it('calls back once per record, and holds records refused by a full queue until room frees up, in order', async () => {
    const fake = new FakeProducer(2);
    const sender = new LibrdkafkaSender(fake);
    const done: Array<[number, RecordMetadata | undefined]> = [];
    for (let i = 0; i < 5; i++) sender.send({ topic: 't', key: null, value: Buffer.from([i]) }, (_e, m) => done.push([i, m]));
    expect(fake.queue).toHaveLength(2);
    const flushed = sender.flush();
    for (let i = 0; i < 5; i++) fake.deliver();
    await flushed;
    expect(done.map(([i]) => i)).toEqual([0, 1, 2, 3, 4]);
    expect(done[0]?.[1]).toEqual({ topic: 't', partition: 0, offset: 7, timestamp: undefined });
  });

  it('keeps the order of a long backlog while it drains and new records join it, and close() fails each record left once', async () => {
    const fake = new FakeProducer(100);
    const sender = new LibrdkafkaSender(fake);
    const acked: number[] = [];
    const failed: number[] = [];
    const send = (i: number) =>
      sender.send({ topic: 't', key: null, value: Buffer.from(String(i)) }, (e) => (e ? failed : acked).push(i));
    for (let i = 0; i < 3000; i++) send(i);
    for (let i = 0; i < 2000; i++) fake.deliver();
    for (let i = 3000; i < 3500; i++) send(i);
    for (let i = 0; i < 1000; i++) fake.deliver();
    expect(acked).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    await sender.close();
    expect(failed).toEqual(Array.from({ length: 500 }, (_, i) => 3000 + i));
  });

  it('reports a delivery failure and a refused record as SEND_FAILED', () => {
    const fake = new FakeProducer(10);
    const sender = new LibrdkafkaSender(fake);
    const errors: unknown[] = [];
    sender.send({ topic: 'bad', key: null, value: null }, (e) => errors.push(e));
    sender.send({ topic: 't', key: null, value: null }, (e) => errors.push(e));
    fake.deliver(new Error('Local: Message timed out'));
    expect(errors).toHaveLength(2);
    expect(errors).toEqual([
      expect.objectContaining({ code: 'SEND_FAILED', message: expect.stringContaining('refused a record for topic') }),
      expect.objectContaining({ code: 'SEND_FAILED', message: expect.stringContaining('Message timed out') }),
    ]);
  });

  it('close() fails the records librdkafka did not report, once each, and ignores reports that come later', async () => {
    const fake = new FakeProducer(1);
    fake.flushError = Object.assign(new Error('Local: Timed out'), { code: -185 });
    const sender = new LibrdkafkaSender(fake);
    const outcomes: Array<Error | undefined> = [];
    const calls = [0, 0];
    for (const i of [0, 1]) {
      sender.send({ topic: 't', key: null, value: null }, (e) => {
        calls[i] = (calls[i] ?? 0) + 1;
        outcomes[i] = e;
      });
    }
    const flushed = sender.flush();
    await sender.close();
    expect(calls).toEqual([1, 1]);
    expect(outcomes.map((e) => e?.message)).toEqual([
      expect.stringContaining('closed before 2 record(s) were acknowledged'),
      expect.stringContaining('closed before 2 record(s) were acknowledged'),
    ]);
    await flushed;
    fake.deliver();
    expect(calls).toEqual([1, 1]);
  });

  it('close() acknowledges records whose delivery reports reach JavaScript after librdkafka flushed them', async () => {
    const fake = new FakeProducer(10);
    const sender = new LibrdkafkaSender(fake);
    const outcomes: Array<[Error | undefined, RecordMetadata | undefined]> = [];
    for (let i = 0; i < 3; i++) sender.send({ topic: 't', key: null, value: null }, (e, m) => outcomes.push([e, m]));
    // Written by the broker; the binding hands the reports over a few turns later.
    fake.afterFlush = () => {
      const n = fake.queue.length;
      setTimeout(() => {
        for (let i = 0; i < n; i++) fake.deliver();
      }, 20);
    };
    await sender.close();
    expect(outcomes).toEqual(Array(3).fill([undefined, { topic: 't', partition: 0, offset: 7, timestamp: undefined }]));
  });

  it('close() stops the poll interval before it disconnects, and a second close() waits for the first without disconnecting again', async () => {
    const fake = new FakeProducer(10);
    const sender = new LibrdkafkaSender(fake);
    sender.send({ topic: 't', key: null, value: null }, () => {});
    fake.deliver();
    await Promise.all([sender.close(), sender.close()]);
    await sender.close();
    // The binding's poll() does not take the lock its disconnect deletes the handle under.
    expect(fake.calls).toEqual(['flush', 'setPollInterval(0)', 'disconnect']);
  });

  it('close() disconnects even when the client throws from flush() (it disconnected itself)', async () => {
    const fake = new FakeProducer(10);
    fake.flush = () => {
      throw new Error('Producer not connected');
    };
    const sender = new LibrdkafkaSender(fake);
    const outcomes: unknown[] = [];
    sender.send({ topic: 't', key: null, value: null }, (e) => outcomes.push(e));
    await sender.close();
    expect(fake.calls).toEqual(['setPollInterval(0)', 'disconnect']);
    expect(outcomes).toEqual([expect.objectContaining({ code: 'SEND_FAILED' })]);
  });

  it("maps the producer settings to librdkafka's names", () => {
    const c = librdkafkaConfig(
      'b:9092',
      resolveProducerConfig({ 'producer.delivery.timeout.ms': '60000' }, { name: 'x' }, { task: 1 }),
    );
    expect(c).toMatchObject({ 'bootstrap.servers': 'b:9092', 'message.timeout.ms': 60000, acks: -1, 'enable.idempotence': true });
  });

  it('retries without limit (message.timeout.ms=0) when delivery.timeout.ms is not set, and places keys with murmur2', () => {
    const c = librdkafkaConfig('b:9092', resolveProducerConfig({}, { name: 'x' }, { task: 1 }));
    expect(c).toMatchObject({ 'message.timeout.ms': 0, partitioner: 'murmur2_random', retries: 2_147_483_647 });
  });

  it('passes producer.retries on (librdkafka would otherwise retry up to 2^31-1 times whatever it says)', () => {
    const c = librdkafkaConfig(
      'b:9092',
      resolveProducerConfig({ 'producer.retries': '0', 'producer.acks': '1' }, { name: 'x' }, { task: 1 }),
    );
    expect(c).toMatchObject({ retries: 0, 'enable.idempotence': false });
  });

  it("uses request.timeout.ms as librdkafka's client-side request timeout (socket.timeout.ms), so a frozen broker is retried that soon", () => {
    const c = librdkafkaConfig(
      'b:9092',
      resolveProducerConfig({ 'producer.request.timeout.ms': '7000' }, { name: 'x' }, { task: 1 }),
    );
    expect(c).toMatchObject({ 'request.timeout.ms': 7000, 'socket.timeout.ms': 7000 });
  });

  describe('stalls', () => {
    beforeEach(() => {
      vi.useFakeTimers({ now: 1_700_000_000_000 });
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('reports a stall when records get no delivery report for request.timeout.ms, and its end at the next one', async () => {
      const fake = new FakeProducer(10);
      const sender = new LibrdkafkaSender(fake, { stallAfterMs: 5000 });
      const stalls: Array<SenderStall | undefined> = [];
      sender.onStall((s) => stalls.push(s));
      sender.send({ topic: 't', key: null, value: null }, () => {});
      await vi.advanceTimersByTimeAsync(4000);
      expect(stalls).toEqual([]);
      await vi.advanceTimersByTimeAsync(2000);
      expect(stalls).toEqual([
        {
          since: 1_700_000_000_000,
          durationMs: 5000,
          reason: 'no delivery report from librdkafka within request.timeout.ms=5000',
        },
      ]);
      await vi.advanceTimersByTimeAsync(6000);
      expect(stalls.at(-1)?.durationMs).toBeGreaterThanOrEqual(10_000);
      fake.deliver();
      expect(stalls.at(-1)).toBeUndefined();
    });

    it('reports a stall at once when librdkafka reports a broker error while records wait', () => {
      const fake = new FakeProducer(10);
      const sender = new LibrdkafkaSender(fake, { stallAfterMs: 5000 });
      const stalls: Array<SenderStall | undefined> = [];
      sender.onStall((s) => stalls.push(s));
      fake.clientError?.(Object.assign(new Error('1/1 brokers are down'), { code: -187 }));
      expect(stalls).toEqual([]);
      sender.send({ topic: 't', key: null, value: null }, () => {});
      fake.clientError?.(Object.assign(new Error('1/1 brokers are down'), { code: -187 }));
      expect(stalls).toEqual([{ since: 1_700_000_000_000, durationMs: 0, reason: '1/1 brokers are down' }]);
    });
  });

  it('says how to install @confluentinc/kafka-javascript when it is missing', async () => {
    await expect(LibrdkafkaSender.connect('b:9092', resolveProducerConfig({}, {}), '/')).rejects.toThrow(
      /CKJS_LINKING=dynamic npm install @confluentinc\/kafka-javascript/,
    );
  });
});
