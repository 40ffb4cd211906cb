import type { ICustomPartitioner } from 'kafkajs';
import { Partitioners } from './kafkajs-fixes.js';

/**
 * kafkajs's `DefaultPartitioner` (Java-compatible murmur2 for keyed records, round-robin for
 * keyless ones, explicit partition wins) that writes the partition it picks back onto the
 * message, so that:
 *
 * - a retried batch puts every record in the same partition as the first attempt (kafkajs
 *   re-partitions on each retry, and round-robin would move keyless records, which breaks the
 *   idempotent producer's sequence numbers and scatters duplicates);
 * - the sender can report each record's partition in its metadata.
 *
 * Only for messages the caller owns: the sender builds a fresh message object per record.
 * Passing it as `createPartitioner` also silences kafkajs's v2 partitioner warning.
 *
 * @example
 * ```ts
 * import { Kafka } from 'kafkajs';
 *
 * const kafka = new Kafka({ brokers: ['127.0.0.1:9092'] });
 * const producer = kafka.producer({ createPartitioner: retryStablePartitioner });
 * ```
 */
export const retryStablePartitioner: ICustomPartitioner = () => {
  const pick = Partitioners.DefaultPartitioner();
  return (args) => {
    const message = args.message;
    const given = message.partition;
    if (given !== undefined && given !== null) return given;
    const partition = pick(args);
    message.partition = partition;
    return partition;
  };
};
