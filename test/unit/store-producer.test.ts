import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { StoreProducer } from '../../src/storage/store-producer.js';

type Sent = Array<{ topic: string; messages: Array<{ partition?: number }> }>;

/** kafkajs producers that answer each send as `answers` says, one producer per kafka.producer() call. */
function fakeKafka(answers: Array<'ok' | 'fail' | 'unanswered'>) {
  const log: string[] = [];
  let made = 0;
  const kafka = {
    producer: () => {
      const id = ++made;
      return {
        connect: async () => {
          log.push(`connect ${id}`);
        },
        disconnect: async () => {
          log.push(`disconnect ${id}`);
        },
        sendBatch: async ({ topicMessages }: { topicMessages: Sent }) => {
          const answer = answers.shift() ?? 'ok';
          log.push(`send on ${id}: ${answer}`);
          if (answer === 'fail') throw new Error('The request timed out');
          // As retryStablePartitioner does: each message's partition is written back onto it.
          for (const { messages } of topicMessages) for (const m of messages) m.partition ??= 0;
          if (answer === 'unanswered') return [];
          return topicMessages.flatMap(({ topic, messages }) =>
            messages.map((m) => ({ topicName: topic, partition: m.partition, errorCode: 0 })),
          );
        },
      };
    },
  } as unknown as Kafka;
  return { kafka, log };
}

describe('StoreProducer', () => {
  it('sends the write after a failed one on a fresh producer (a new producer id), so it cannot pass for a duplicate', async () => {
    const { kafka, log } = fakeKafka(['ok', 'fail', 'ok', 'ok']);
    const producer = new StoreProducer(kafka);
    await producer.connect();
    await producer.send('configs', [{ key: 'a', value: '1' }], 'the config');
    await expect(producer.send('configs', [{ key: 'b', value: '2' }], 'the config')).rejects.toThrow('timed out');
    await producer.send('configs', [{ key: 'b', value: '2' }], 'the config');
    await producer.send('configs', [{ key: 'c', value: '3' }], 'the config');
    expect(log).toEqual([
      'connect 1',
      'send on 1: ok',
      'send on 1: fail',
      'disconnect 1',
      'connect 2',
      'send on 2: ok',
      'send on 2: ok',
    ]);
  });

  it('fails a write kafkajs reports done without an answer for its partition (kafkajs#1303), and replaces the producer', async () => {
    const { kafka, log } = fakeKafka(['unanswered', 'ok']);
    const producer = new StoreProducer(kafka);
    await producer.connect();
    await expect(producer.send('statuses', [{ key: 'a', value: '1' }], 'the status')).rejects.toThrow(
      'kafkajs reported the status written, but its response has no offset for statuses/0',
    );
    await producer.send('statuses', [{ key: 'a', value: '1' }], 'the status');
    expect(log).toEqual(['connect 1', 'send on 1: unanswered', 'disconnect 1', 'connect 2', 'send on 2: ok']);
  });
});
