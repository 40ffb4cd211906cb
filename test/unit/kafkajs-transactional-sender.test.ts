import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkajsTransactionalSender } from '../../src/kafka/kafkajs-transactional-sender.js';
import type { RecordMetadata } from '../../src/runtime/ports.js';

/** The part of a kafkajs client the transactional sender uses, recording what it is asked. */
function fakeKafka(log: string[]): Kafka {
  let offset = 0;
  const transaction = () => {
    let active = true;
    return {
      isActive: () => active,
      sendBatch: async ({
        topicMessages,
      }: {
        topicMessages: Array<{ topic: string; messages: Array<{ partition?: number }> }>;
      }) =>
        topicMessages.map(({ topic, messages }) => {
          for (const m of messages) m.partition = 0;
          const baseOffset = String(offset);
          offset += messages.length;
          return { topicName: topic, partition: 0, errorCode: 0, baseOffset };
        }),
      commit: async () => {
        active = false;
        log.push('commit');
      },
      abort: async () => {
        active = false;
        log.push('abort');
      },
    };
  };
  const producer = { connect: async () => {}, disconnect: async () => {}, transaction: async () => transaction() };
  return { producer: () => producer } as unknown as Kafka;
}

describe('KafkajsTransactionalSender', () => {
  it('a callback that throws leaves the committed transaction committed: no abort, no second callback, the others called back', async () => {
    const log: string[] = [];
    const sender = new KafkajsTransactionalSender({
      kafka: fakeKafka(log),
      transactionalId: 'tx-unit',
      offsetsTopic: 'offsets',
      offsetMessages: () => [{ key: 'k', value: 'v' }],
    });
    await sender.connect();
    log.length = 0;
    const calls: Array<[string, RecordMetadata | Error | undefined]> = [];
    sender.send({ topic: 't', key: null, value: Buffer.from('a') }, (e, m) => {
      calls.push(['a', e ?? m]);
      throw new Error('callback of a');
    });
    sender.send({ topic: 't', key: null, value: Buffer.from('b') }, (e, m) => calls.push(['b', e ?? m]));
    await expect(sender.commitTransaction('c', [])).rejects.toThrow('callback of a');
    expect(log).toEqual(['commit']);
    expect(calls).toEqual([
      ['a', expect.objectContaining({ partition: 0, offset: 0 })],
      ['b', expect.objectContaining({ partition: 0, offset: 1 })],
    ]);
    // Not broken: the next transaction commits.
    sender.send({ topic: 't', key: null, value: Buffer.from('c') }, (e, m) => calls.push(['c', e ?? m]));
    await sender.commitTransaction('c', []);
    expect(calls[2]).toEqual(['c', expect.objectContaining({ offset: 3 })]);
    await sender.close();
  });
});
