/** The longest topic name Kafka accepts. */
export const MAX_TOPIC_LENGTH = 249;

const LEGAL = /^[a-zA-Z0-9._-]+$/;

/**
 * What is wrong with a topic name by Kafka's rules (ASCII letters, digits, `.`, `_` and `-`;
 * 1 to 249 characters; not `.` or `..`), or undefined when Kafka accepts it. The runtime
 * checks every record's topic against these rules whatever the sender, so what runs on the
 * embedded default also runs on Kafka.
 *
 * @example
 * ```ts
 * topicNameProblem('orders.v1'); // undefined
 * topicNameProblem('a b'); // 'contains characters Kafka does not allow ...'
 * ```
 */
export function topicNameProblem(topic: string): string | undefined {
  if (topic.length === 0) return 'is empty';
  if (topic.length > MAX_TOPIC_LENGTH) return `is ${topic.length} characters long, more than Kafka's ${MAX_TOPIC_LENGTH}`;
  if (topic === '.' || topic === '..') return `is '${topic}', which Kafka does not allow`;
  if (!LEGAL.test(topic)) return 'contains characters Kafka does not allow: use only ASCII letters, digits, ., _ and -';
  return undefined;
}
