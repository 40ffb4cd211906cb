import { randomBytes } from 'node:crypto';
import type { ICustomPartitioner, PartitionMetadata } from 'kafkajs';
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
  // Keyless messages are spread here rather than by `pick`, as kafkajs does (a counter per topic
  // from a random start, over the partitions that have a leader), without kafkajs's new array of
  // available partitions for every message: on the producer thread that was most of the garbage
  // per record. The list is made again whenever kafkajs passes another metadata array (a refresh
  // decodes new ones; kafkajs never changes one in place).
  const counters = new Map<string, number>();
  let metadata: readonly PartitionMetadata[] | undefined;
  let available: readonly PartitionMetadata[] = [];
  return (args) => {
    const message = args.message;
    const given = message.partition;
    if (given !== undefined && given !== null) return given;
    let partition: number;
    if (message.key !== null && message.key !== undefined) {
      partition = pick(args);
    } else {
      const all = args.partitionMetadata;
      if (all !== metadata) {
        metadata = all;
        available = all.filter((p) => p.leader >= 0);
      }
      const counter = (counters.get(args.topic) ?? randomBytes(4).readUInt32BE(0)) + 1;
      counters.set(args.topic, counter);
      // As kafkajs: the counter's low 31 bits, over the partitions with a leader if any has one.
      partition =
        available.length > 0
          ? (available[(counter & 0x7fffffff) % available.length] as PartitionMetadata).partitionId
          : (counter & 0x7fffffff) % all.length;
    }
    message.partition = partition;
    return partition;
  };
};
