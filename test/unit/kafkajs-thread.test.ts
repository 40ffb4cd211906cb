import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { logLevel } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import { isRetriableSendError } from '../../src/kafka/kafkajs-errors.js';
import { KafkajsSender } from '../../src/kafka/kafkajs-sender.js';
import { ThreadedKafkajs } from '../../src/kafka/kafkajs-thread.js';
import {
  applyPartitions,
  deserializeError,
  type PackedTopic,
  packTopics,
  partitionsOf,
  serializeError,
  unpackTopics,
} from '../../src/kafka/kafkajs-thread-protocol.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';
import { retryStablePartitioner } from '../../src/kafka/retry-stable-partitioner.js';
import type { RecordMetadata } from '../../src/runtime/ports.js';
import { kafkajsError, retriesExceeded } from '../helpers/fake-kafkajs-producer.js';

const bytes = fc.option(
  fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
  { nil: null },
);
const message = fc.record(
  {
    key: bytes,
    value: bytes,
    partition: fc.option(fc.integer({ min: 0, max: 1000 }), { nil: undefined }),
    timestamp: fc.option(fc.integer({ min: 1, max: 2 ** 45 }), { nil: undefined }),
    headers: fc.option(
      fc.dictionary(
        fc.string({ maxLength: 8 }),
        fc.oneof(
          fc.string({ maxLength: 8 }),
          bytes.map((b) => b ?? Buffer.alloc(0)),
        ),
      ),
      {
        nil: undefined,
      },
    ),
  },
  { requiredKeys: ['key', 'value'] },
);
const topics = fc.array(
  fc.record({ topic: fc.string({ minLength: 1, maxLength: 20 }), messages: fc.array(message, { maxLength: 10 }) }),
  {
    maxLength: 4,
  },
);

describe('the producer thread protocol', () => {
  it('hands kafkajs on the thread the messages the sender gave, field for field (property)', () => {
    fc.assert(
      fc.property(topics, (given) => {
        const got = unpackTopics(packTopics(given as PackedTopic[]));
        expect(got.map((t) => t.topic)).toEqual(given.map((t) => t.topic));
        given.forEach((t, i) => {
          const out = got[i]?.messages ?? [];
          expect(out).toHaveLength(t.messages.length);
          t.messages.forEach((m, j) => {
            const o = out[j];
            expect(o?.key ?? null).toEqual(m.key);
            expect(o?.value ?? null).toEqual(m.value);
            expect(o?.partition).toBe(m.partition);
            expect(o?.timestamp).toBe(m.timestamp);
            expect(o?.headers).toEqual(m.headers);
          });
        });
      }),
    );
  });

  it("keeps what kafkajs's encoder tells apart in header values and timestamps", () => {
    // A sparse array: index 1 of tags is never set.
    const tags: unknown[] = ['a'];
    tags[2] = Buffer.from('b');
    const given = [
      { key: null, value: null, timestamp: null, headers: { tags, none: null, gone: undefined, n: 42, s: 'é' } },
      { key: null, value: null, timestamp: 0 },
      { key: null, value: null, timestamp: '0' },
    ] as unknown as PackedTopic['messages'];
    const [t] = unpackTopics(packTopics([{ topic: 't', messages: given }]));
    // An array is one header per element, holes skipped (kafkajs's flatMap); null and undefined a null value.
    expect(t?.messages[0]?.headers).toEqual({ tags: ['a', Buffer.from('b')], none: null, gone: null, n: '42', s: 'é' });
    expect(t?.messages[0]?.timestamp).toBeUndefined();
    // kafkajs stamps a number 0 with the time of encoding, and writes a string "0" as 0: types are kept.
    expect(t?.messages.slice(1).map((m) => m.timestamp)).toEqual([0, '0']);
  });

  it('keeps a header named __proto__, which kafkajs writes like any other, in its place', () => {
    const headers = JSON.parse('{"a":"1","__proto__":"x","b":["2","3"]}') as Record<string, unknown>;
    expect(Object.keys(headers)).toEqual(['a', '__proto__', 'b']);
    const given = [{ key: null, value: null, headers }] as unknown as PackedTopic['messages'];
    const got = unpackTopics(packTopics([{ topic: 't', messages: given }]))[0]?.messages[0]?.headers ?? {};
    expect(Object.keys(got)).toEqual(['a', '__proto__', 'b']);
    expect(Object.getOwnPropertyDescriptor(got, '__proto__')?.value).toBe('x');
    expect(Object.getPrototypeOf(got)).toBe(Object.prototype);
  });

  it('gives a keyless message without a partition { value, partition: undefined }: the partitioner fills in a field it has', () => {
    const [t] = unpackTopics(packTopics([{ topic: 't', messages: [{ key: null, value: Buffer.from('x') }] }]));
    const message = t?.messages[0] ?? {};
    expect(Object.keys(message)).toEqual(['value', 'partition']);
    expect(message).toHaveProperty('partition', undefined);
  });

  it("writes the thread's partitions onto the sender's messages that had none, and only those", () => {
    const mine: PackedTopic[] = [
      {
        topic: 'a',
        messages: [
          { key: null, value: null },
          { key: null, value: null, partition: 7 },
        ],
      },
      { topic: 'b', messages: [{ key: null, value: null }] },
    ];
    const theirs = unpackTopics(packTopics(mine));
    (theirs[0]?.messages[0] as { partition?: number }).partition = 2;
    (theirs[0]?.messages[1] as { partition?: number }).partition = 9; // not the partitioner's to change
    applyPartitions(mine, partitionsOf(theirs));
    expect(mine.map((t) => t.messages.map((m) => m.partition))).toEqual([[2, 7], [undefined]]);
  });

  it('keeps the name, message, retriable flag, retry count and cause chain of a kafkajs error', () => {
    const e = deserializeError(serializeError(retriesExceeded()));
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('KafkaJSNumberOfRetriesExceeded');
    expect((e as { retryCount?: number }).retryCount).toBe(5);
    expect((e.cause as Error).name).toBe('KafkaJSConnectionError');
    // What the sender decides on is unchanged by the crossing.
    expect(isRetriableSendError(e)).toBe(isRetriableSendError(retriesExceeded()));
    const protocol = deserializeError(
      serializeError(kafkajsError('KafkaJSProtocolError', 'too large', { retriable: false, type: 'MESSAGE_TOO_LARGE' })),
    );
    expect([protocol.message, (protocol as { type?: string }).type, (protocol as { retriable?: boolean }).retriable]).toEqual([
      'too large',
      'MESSAGE_TOO_LARGE',
      false,
    ]);
  });
});

describe('ThreadedKafkajs', () => {
  it('refuses a partitioner other than the retry-stable one, which is the only one a thread runs', () => {
    const kafka = new ThreadedKafkajs({ client: { brokers: ['127.0.0.1:1'] } });
    expect(() => kafka.producer({ createPartitioner: () => () => 0 })).toThrow(/retryStablePartitioner/);
    expect(() => kafka.producer({ createPartitioner: retryStablePartitioner })).not.toThrow();
  });

  it("rejects connect() with kafkajs's own error when no broker answers, and can connect again", async () => {
    const lines: Array<{ namespace: string; level: number; message: unknown }> = [];
    const kafka = new ThreadedKafkajs({
      client: { brokers: ['127.0.0.1:1'], connectionTimeout: 200, retry: { retries: 0 }, logLevel: logLevel.ERROR },
      logCreator: () => (entry) => lines.push({ namespace: entry.namespace, level: entry.level, message: entry.log.message }),
    });
    const producer = kafka.producer({ createPartitioner: retryStablePartitioner, retry: { retries: 0 } });
    const failure = await producer.connect().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(failure?.name).toMatch(/^KafkaJS/);
    expect(failure?.message).toMatch(/ECONNREFUSED|Connection/);
    // A second attempt gets a thread of its own, and the same answer.
    const again = await producer.connect().then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(again?.name).toBe(failure?.name);
    await producer.disconnect();
    // kafkajs's own log lines on the thread reach the main thread's logCreator.
    expect(lines.some((l) => l.level === logLevel.ERROR && /ECONNREFUSED|Connection/.test(String(l.message)))).toBe(true);
  });

  const FAKE_THREAD = new URL('../helpers/fake-producer-thread.ts', import.meta.url);
  afterEach(() => {
    delete process.env.TRIBUTARY_FAKE_THREAD;
  });

  it.each(['true', 'false'])(
    'fails the records of a batch whose thread dies with SEND_FAILED saying so, then sends on a fresh thread (idempotence %s)',
    async (idempotence) => {
      const dir = await mkdtemp(join(tmpdir(), 'tributary-thread-'));
      process.env.TRIBUTARY_FAKE_THREAD = `dies-once:${join(dir, 'died')}`;
      const kafka = new ThreadedKafkajs({ client: { brokers: ['127.0.0.1:1'] }, threadScript: FAKE_THREAD });
      const sender = new KafkajsSender({
        kafka,
        config: resolveProducerConfig(
          { 'producer.linger.ms': '0', 'producer.enable.idempotence': idempotence },
          { name: 'c' },
          { task: 0 },
        ),
      });
      await sender.connect();
      const outcomes: Array<{ error: Error | undefined; metadata: RecordMetadata | undefined }> = [];
      const send = () =>
        sender.send({ topic: 't', key: null, value: Buffer.from('v') }, (error, metadata) => outcomes.push({ error, metadata }));
      send();
      await sender.flush();
      expect(isTributaryError(outcomes[0]?.error) && outcomes[0]?.error.code).toBe('SEND_FAILED');
      expect(outcomes[0]?.error?.message).toMatch(/the producer failed: the kafkajs producer thread exited \(code 3\)/);
      send();
      await sender.flush();
      expect(outcomes[1]).toEqual({ error: undefined, metadata: { topic: 't', partition: 0, offset: 0, timestamp: undefined } });
      await sender.close();
    },
  );

  it('disconnect() made while a connect is failing resolves once the connect has failed', async () => {
    process.env.TRIBUTARY_FAKE_THREAD = 'connect-fails';
    const producer = new ThreadedKafkajs({ client: { brokers: ['127.0.0.1:1'] }, threadScript: FAKE_THREAD }).producer({});
    const connecting = producer.connect().then(
      () => 'connected',
      (e: unknown) => (e as Error).name,
    );
    const disconnected = producer.disconnect().then(() => 'disconnected');
    const timeout = new Promise((r) => setTimeout(() => r('disconnect() still waiting after 5 s'), 5000));
    expect(await connecting).toBe('KafkaJSConnectionError');
    expect(await Promise.race([disconnected, timeout])).toBe('disconnected');
  });
});
