import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';

/** A kafkajs admin whose createTopics throws `type` (as kafkajs's wait for leaders does once the topic exists). */
function kafkaWhoseCreateThrows(type: string, offsetsAfter = 2): { kafka: Kafka; fetches: () => number } {
  let fetches = 0;
  const admin = {
    connect: async () => {},
    disconnect: async () => {},
    createTopics: async () => {
      throw Object.assign(new Error(`This server does not host this topic-partition (${type})`), { type, retriable: true });
    },
    fetchTopicOffsets: async () => {
      fetches++;
      if (fetches < offsetsAfter) throw Object.assign(new Error('not led yet'), { type: 'UNKNOWN_TOPIC_OR_PARTITION' });
      return [{ partition: 0, offset: '0', high: '0', low: '0' }];
    },
  };
  return { kafka: { admin: () => admin } as unknown as Kafka, fetches: () => fetches };
}

describe('TopicAdmin when kafkajs gives up waiting for the leaders of a topic it created', () => {
  for (const type of ['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE']) {
    it(`waits for them itself after ${type}, and counts the topic as created`, async () => {
      const { kafka, fetches } = kafkaWhoseCreateThrows(type);
      const admin = new TopicAdmin(kafka);
      await expect(admin.ensureTopics(['orders'], { partitions: 2 })).resolves.toEqual(['orders']);
      expect(fetches()).toBe(2);
    });
  }

  it('still refuses a topic the broker will not create, naming what it answered', async () => {
    const { kafka } = kafkaWhoseCreateThrows('INVALID_REPLICATION_FACTOR');
    const error = await new TopicAdmin(kafka).ensureTopics(['orders'], { replicationFactor: 3 }).catch((e: unknown) => e);
    expect(isTributaryError(error) && error.code).toBe('TOPIC_INVALID');
    expect((error as Error).message).toMatch(/the broker answered INVALID_REPLICATION_FACTOR/);
  });
});
