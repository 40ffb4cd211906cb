import { describe, expect, it } from 'vitest';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { readWholeTopic } from '../helpers/distributed-audit.js';
import { describeKafka, testKafka, uniqueTopic } from '../helpers/kafka.js';

describeKafka('readWholeTopic, the tests’ reader of a whole topic', () => {
  describe('when fewer records than expected are there', () => {
    it('says how many it read from each partition, why it stopped, and the end offsets the broker gives', async () => {
      const kafka = testKafka();
      const topic = uniqueTopic('read-whole');
      const admin = new TopicAdmin(kafka);
      try {
        await admin.ensureTopics([topic], { partitions: 2 });
      } finally {
        await admin.close();
      }
      const producer = kafka.producer();
      await producer.connect();
      try {
        await producer.send({ topic, messages: [0, 1].map((i) => ({ partition: 0, value: `record ${i}` })) });
      } finally {
        await producer.disconnect();
      }
      // Half of what a test expects, all in partition 0: as a sender that lost partition 1's records.
      // Why the read stopped depends on whether its last read to the end was still waiting at the
      // deadline (a loaded machine) or had reached the end offsets: either reason is named.
      await expect(readWholeTopic(kafka, topic, 4, 12_000)).rejects.toThrow(
        new RegExp(
          `^readWholeTopic\\('${topic}'\\): got 2 of 4 records within 12000 ms \\(partition 0: 2 read; (read up to the end offsets, which hold no more|Timed out after \\d+ ms reading topic .*); end offsets: 0: 2, 1: 0\\)$`,
        ),
      );
    });
  });
});
