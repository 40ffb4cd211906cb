import type { Message, RecordMetadata } from 'kafkajs';

/**
 * Throws unless the responses of a `sendBatch` name every partition its messages went to (the
 * partitioner writes each message's partition back onto it). kafkajs can resolve `sendBatch`
 * without having sent some partitions: a retry inside it that finds a partition's new leader
 * among brokers that already answered skips that partition (tulios/kafkajs#1303, open), and
 * its records would count as written. Use with a partitioner that writes the partition back
 * (retryStablePartitioner).
 */
export function assertAnswered(
  sent: ReadonlyArray<{ topic: string; messages: readonly Message[] }>,
  responses: readonly RecordMetadata[],
  what: string,
): void {
  const answered = new Set(responses.map((r) => `${r.topicName}\u0000${r.partition}`));
  const missing = new Set<string>();
  for (const { topic, messages } of sent)
    for (const m of messages)
      if (typeof m.partition !== 'number' || !answered.has(`${topic}\u0000${m.partition}`))
        missing.add(`${topic}/${m.partition}`);
  if (missing.size > 0)
    throw new Error(
      `kafkajs reported ${what} written, but its response has no offset for ${[...missing].join(', ')} (tulios/kafkajs#1303)`,
    );
}
