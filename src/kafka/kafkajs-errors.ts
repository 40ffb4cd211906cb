/**
 * Telling kafkajs errors apart, without importing kafkajs's classes: a second copy of kafkajs
 * (or Confluent's KafkaJS-compatible client) raises errors that fail `instanceof` but keep the
 * `name`s and the `retriable` flag.
 */

/** Transient conditions kafkajs reports as errors that are not flagged `retriable`. */
const TRANSIENT_NAMES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSLockTimeout',
  'KafkaJSBrokerNotFound',
  'KafkaJSMetadataNotLoaded',
  'KafkaJSTopicMetadataNotLoaded',
  'KafkaJSStaleTopicMetadataAssignment',
  'KafkaJSNoBrokerAvailableError',
]);

/**
 * True when `e` is an error raised by kafkajs: its `name` starts with `KafkaJS`.
 *
 * @param e Anything thrown or rejected.
 * @example
 * ```ts
 * declare const reason: unknown; // what a kafkajs call rejected with
 * if (isKafkajsError(reason)) console.warn(reason.message);
 * ```
 */
export function isKafkajsError(e: unknown): e is Error {
  return e instanceof Error && typeof e.name === 'string' && e.name.startsWith('KafkaJS');
}

/**
 * True when a failed `sendBatch` is worth sending again: the condition behind it is transient
 * (broker unreachable or restarting, leader moving, request timed out) rather than a verdict on
 * the records (too large, not authorised, invalid topic).
 *
 * kafkajs wraps the last error of an exhausted retry loop in `KafkaJSNumberOfRetriesExceeded`
 * and other failures in `KafkaJSNonRetriableError`, both flagged not retriable; the decision is
 * therefore taken on the innermost `cause`. Errors that are not kafkajs's (a `TypeError` from a
 * bad record) are never retriable.
 *
 * @param e The rejection reason of `producer.sendBatch`.
 */
export function isRetriableSendError(e: unknown): boolean {
  if (!isKafkajsError(e)) return false;
  // The innermost kafkajs error of the cause chain decides (a system error below it, such as
  // ECONNREFUSED, is described by the kafkajs error that wraps it).
  let root: Error & { retriable?: unknown } = e;
  for (let depth = 0; depth < 8; depth++) {
    const cause: unknown = (root as { cause?: unknown }).cause;
    if (!isKafkajsError(cause) || cause === root) break;
    root = cause;
  }
  return root.retriable === true || TRANSIENT_NAMES.has(root.name);
}

/**
 * How many requests kafkajs made before it gave up with `e`: `retryCount + 1` for
 * `KafkaJSNumberOfRetriesExceeded`, else 1.
 */
export function attemptsIn(e: unknown): number {
  const retryCount = (e as { retryCount?: unknown } | null)?.retryCount;
  return typeof retryCount === 'number' && Number.isFinite(retryCount) ? retryCount + 1 : 1;
}

/**
 * True when a queueing producer (KafkajsProducerLike.queueDepth, the producer thread) answered a
 * `sendBatch` call without sending it, because an earlier call failed or its thread is gone.
 *
 * @param e The rejection reason of `producer.sendBatch`.
 */
export function isNotAttempted(e: unknown): boolean {
  return (e as { notAttempted?: unknown } | null)?.notAttempted === true;
}

/**
 * True when the producer behind a failed `sendBatch` can send nothing more (its thread died):
 * the sender must make a fresh one, whatever its idempotence.
 *
 * @param e The rejection reason of `producer.sendBatch`.
 */
export function isProducerGone(e: unknown): boolean {
  return (e as { producerGone?: unknown } | null)?.producerGone === true;
}
