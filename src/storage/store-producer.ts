import type { Kafka, Message, Producer } from 'kafkajs';
import { assertAnswered } from '../kafka/kafkajs-answered.js';
import { retryStablePartitioner } from '../kafka/retry-stable-partitioner.js';

/**
 * The producer of a cluster topic store (config and status topics): idempotent, acks=all, one
 * request in flight, Java's placement of keys. Two kafkajs hazards are handled here:
 *
 * - after a write fails, the next goes out on a fresh producer (a new producer id). kafkajs rolls
 *   a failed request's sequence numbers back, so the same producer's next write to the partition
 *   would reuse them; when the failed one was written after all (its answer lost), the broker
 *   answers the next as a duplicate of it, with its offset, without writing it: a connector
 *   config or status reported stored that is not;
 * - a write kafkajs reports done with a partition unanswered (tulios/kafkajs#1303) fails.
 */
export class StoreProducer {
  private producer: Producer | undefined;
  /** Set by a failed write: the next one replaces the producer first. */
  private replace = false;

  constructor(private readonly kafka: Kafka) {}

  async connect(): Promise<void> {
    const producer = this.create();
    this.producer = producer;
    await producer.connect();
  }

  /** Writes `messages` to `topic`; rejects if Kafka did not take all of them (`what` names them in the error). */
  async send(topic: string, messages: readonly Message[], what: string): Promise<void> {
    if (this.replace) {
      const old = this.producer;
      this.producer = undefined;
      await old?.disconnect().catch(() => {});
      const fresh = this.create();
      try {
        await fresh.connect();
      } catch (e) {
        await fresh.disconnect().catch(() => {});
        throw e;
      }
      this.producer = fresh;
      this.replace = false;
    }
    const producer = this.producer;
    if (producer === undefined) throw new Error('the store is not started');
    try {
      const topicMessages = [{ topic, messages: [...messages] }];
      assertAnswered(topicMessages, await producer.sendBatch({ acks: -1, topicMessages }), what);
    } catch (e) {
      this.replace = true;
      throw e;
    }
  }

  async disconnect(): Promise<void> {
    const producer = this.producer;
    this.producer = undefined;
    await producer?.disconnect();
  }

  private create(): Producer {
    return this.kafka.producer({
      createPartitioner: retryStablePartitioner,
      allowAutoTopicCreation: false,
      idempotent: true,
      maxInFlightRequests: 1,
    });
  }
}
