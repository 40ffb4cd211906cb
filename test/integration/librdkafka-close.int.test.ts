import { expect, it } from 'vitest';
import { LibrdkafkaSender } from '../../src/kafka/librdkafka-sender.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { RecordMetadata } from '../../src/runtime/ports.js';
import { consumeAll, describeKafka, requireKafkaBootstrap, testKafka, uniqueTopic } from '../helpers/kafka.js';
import { describeLibrdkafka } from '../helpers/senders.js';

describeKafka('closing the librdkafka sender', () => {
  describeLibrdkafka('sender=librdkafka', () => {
    it('acknowledges at close every record librdkafka wrote, though the binding hands their reports over after its flush', async () => {
      const topic = uniqueTopic('rdkafka-close');
      const admin = new TopicAdmin(testKafka());
      await admin.ensureTopics([topic], { partitions: 1 });
      await admin.close();
      const sender = await LibrdkafkaSender.connect(
        requireKafkaBootstrap(),
        resolveProducerConfig({}, { name: 'rdkafka-close-it' }, { task: 0 }),
      );
      const total = 20_000;
      const errors: Error[] = [];
      const acked: RecordMetadata[] = [];
      for (let i = 0; i < total; i++) {
        sender.send({ topic, partition: 0, key: null, value: Buffer.from(`r-${i}`) }, (e, m) => {
          if (e) errors.push(e);
          else if (m) acked.push(m);
        });
      }
      // No flush() first: close() itself must wait for the reports of what librdkafka delivers.
      await sender.close();
      expect(errors.map((e) => e.message).slice(0, 3)).toEqual([]);
      expect(acked).toHaveLength(total);
      expect(new Set(acked.map((m) => m.offset)).size).toBe(total);
      expect(await consumeAll(topic, total)).toHaveLength(total);
      // A second close() neither throws nor disconnects twice.
      await sender.close();
    });
  });
});
