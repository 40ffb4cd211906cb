import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { KafkajsTransactionalSender } from '../../src/kafka/kafkajs-transactional-sender.js';
import type { RecordMetadata } from '../../src/runtime/ports.js';

/** The part of a kafkajs client the transactional sender uses, recording what it is asked. */
function fakeKafka(log: string[], options: { unanswered?: number; fenced?: boolean } = {}): Kafka {
  const offsets = new Map<string, number>();
  type Sent = Array<{ topic: string; messages: Array<{ partition?: number }> }>;
  const transaction = () => {
    let active = true;
    return {
      isActive: () => active,
      // Answers per partition (a record's own, else 0), as kafkajs does; leaves out `unanswered`,
      // as kafkajs does after a retry inside it skipped that partition (tulios/kafkajs#1303).
      sendBatch: async ({ topicMessages }: { topicMessages: Sent }) =>
        topicMessages.flatMap(({ topic, messages }) => {
          const counts = new Map<number, number>();
          for (const m of messages) {
            m.partition ??= 0;
            counts.set(m.partition, (counts.get(m.partition) ?? 0) + 1);
          }
          return [...counts]
            .filter(([partition]) => partition !== options.unanswered)
            .map(([partition, n]) => {
              const key = `${topic}/${partition}`;
              const baseOffset = offsets.get(key) ?? 0;
              offsets.set(key, baseOffset + n);
              return { topicName: topic, partition, errorCode: 0, baseOffset: String(baseOffset) };
            });
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
  const producer = {
    connect: async () => {},
    disconnect: async () => {
      log.push('disconnect');
    },
    transaction: async () => {
      if (options.fenced)
        throw Object.assign(new Error('The producer attempted to use an old epoch'), { type: 'INVALID_PRODUCER_EPOCH' });
      return transaction();
    },
  };
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
    expect(calls[2]).toEqual(['c', expect.objectContaining({ partition: 0, offset: 2 })]);
    await sender.close();
  });
  it('aborts a transaction whose response leaves out a partition it sent to (kafkajs#1303), rather than commit without it', async () => {
    const log: string[] = [];
    const sender = new KafkajsTransactionalSender({
      kafka: fakeKafka(log, { unanswered: 1 }),
      transactionalId: 'tx-unit',
      offsetsTopic: 'offsets',
      offsetMessages: () => [{ key: 'k', value: 'v' }],
    });
    await sender.connect();
    log.length = 0;
    const got: Array<RecordMetadata | Error | undefined> = [];
    for (const partition of [0, 1])
      sender.send({ topic: 't', partition, key: null, value: Buffer.from('x') }, (e, m) => got.push(e ?? m));
    const failed = { code: 'TRANSACTION_FAILED', message: expect.stringContaining('no offset for t/1 (tulios/kafkajs#1303)') };
    await expect(sender.commitTransaction('c', [])).rejects.toMatchObject(failed);
    expect(log).toEqual(['abort']);
    expect(got).toEqual([expect.objectContaining(failed), expect.objectContaining(failed)]);
    await sender.close();
  });
  it('disconnects when connect() fails to fence, so a restart leaves no client behind', async () => {
    const log: string[] = [];
    const sender = new KafkajsTransactionalSender({
      kafka: fakeKafka(log, { fenced: true }),
      transactionalId: 'tx-unit',
      offsetsTopic: 'offsets',
      offsetMessages: () => [],
    });
    await expect(sender.connect()).rejects.toThrow('old epoch');
    expect(log).toEqual(['disconnect']);
  });
});
