import { describe, expect, it } from 'vitest';
import { assertAnswered } from '../../src/kafka/kafkajs-answered.js';

const answer = (topicName: string, partition: number) => ({ topicName, partition, errorCode: 0, baseOffset: '0' });

describe('assertAnswered (kafkajs#1303)', () => {
  it('passes when every partition a message went to answered', () => {
    const sent = [
      {
        topic: 'a',
        messages: [
          { value: '1', partition: 0 },
          { value: '2', partition: 2 },
        ],
      },
      { topic: 'b', messages: [{ value: '3', partition: 0 }] },
    ];
    expect(() => assertAnswered(sent, [answer('a', 0), answer('a', 2), answer('b', 0)], 'the records')).not.toThrow();
  });

  it('names each partition missing from the responses, and a message with no partition written back', () => {
    const sent = [
      {
        topic: 'a',
        messages: [
          { value: '1', partition: 0 },
          { value: '2', partition: 2 },
          { value: '3', partition: 2 },
        ],
      },
      { topic: 'b', messages: [{ value: '4' }] },
    ];
    expect(() => assertAnswered(sent, [answer('a', 0), answer('b', 2)], 'the offsets')).toThrow(
      'kafkajs reported the offsets written, but its response has no offset for a/2, b/undefined (tulios/kafkajs#1303)',
    );
  });
});
