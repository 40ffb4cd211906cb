import { describe, expect, it } from 'vitest';
import {
  LibrdkafkaSender,
  librdkafkaConfig,
  type RdkafkaDeliveryReport,
  type RdkafkaProducerLike,
} from '../../src/kafka/librdkafka-sender.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';
import type { RecordMetadata } from '../../src/runtime/ports.js';

/** A fake librdkafka producer whose queue holds `capacity` records until `deliver()`. */
class FakeProducer implements RdkafkaProducerLike {
  queue: Array<{ topic: string; opaque: unknown }> = [];
  private report: ((error: Error | null, report: RdkafkaDeliveryReport) => void) | undefined;
  constructor(private readonly capacity: number) {}
  connect(_o: object, cb: (e: Error | null) => void) {
    cb(null);
  }
  disconnect(cb: () => void) {
    cb();
  }
  setPollInterval() {}
  flush(_t: number, cb: (e: Error | null) => void) {
    cb(null);
  }
  on(_event: string, listener: (error: Error | null, report: RdkafkaDeliveryReport) => void) {
    this.report = listener;
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

  it("maps the producer settings to librdkafka's names", () => {
    const c = librdkafkaConfig(
      'b:9092',
      resolveProducerConfig({ 'producer.delivery.timeout.ms': '60000' }, { name: 'x' }, { task: 1 }),
    );
    expect(c).toMatchObject({ 'bootstrap.servers': 'b:9092', 'message.timeout.ms': 60000, acks: -1, 'enable.idempotence': true });
  });

  it('says how to install @confluentinc/kafka-javascript when it is missing', async () => {
    await expect(LibrdkafkaSender.connect('b:9092', resolveProducerConfig({}, {}), '/')).rejects.toThrow(
      /CKJS_LINKING=dynamic npm install @confluentinc\/kafka-javascript/,
    );
  });
});
