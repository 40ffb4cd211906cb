/**
 * The kafkajs sender's retry and delivery-timeout policy: when a failed batch is sent again and
 * after how long, when it is given up, and what its records are told then. Pure functions of
 * the settings, the batch and the time (kafkajs only to tell its error classes apart).
 */
import { TributaryError } from '../api/errors.js';
import { asError, type Batch, topicList, wasSent } from './kafkajs-batch.js';
import { isKafkajsError } from './kafkajs-errors.js';
import type { ResolvedProducerConfig } from './producer-config.js';

/** The settings the policy reads. */
export type RetrySettings = Pick<
  ResolvedProducerConfig,
  'retries' | 'retryBackoffMs' | 'retryBackoffMaxMs' | 'deliveryTimeoutMs' | 'batchSizeBytes'
>;

/** The back-off before the next re-send of a batch re-sent `resends` times so far (or the next connection attempt): exponential from `retry.backoff.ms`, at most `retry.backoff.max.ms`. */
export function backoffMs(settings: RetrySettings, resends: number): number {
  return Math.min(settings.retryBackoffMs * 2 ** resends, settings.retryBackoffMaxMs);
}

/** True when `delivery.timeout.ms` from the batch's first record has passed at `now`. */
export function isExpired(settings: RetrySettings, batch: Batch, now: number): boolean {
  return now >= batch.createdAt + settings.deliveryTimeoutMs;
}

/**
 * True when a batch that failed with a transient error may be sent again after `delayMs`:
 * `retries` is not used up and `delivery.timeout.ms` would not pass before the re-send.
 */
export function mayResend(settings: RetrySettings, batch: Batch, now: number, delayMs: number): boolean {
  return batch.requests <= settings.retries && now + delayMs < batch.createdAt + settings.deliveryTimeoutMs;
}

/**
 * The error for the records of a batch given up after a failed request.
 *
 * @param retriable Whether the last error was transient (else: not retried at all).
 * @param closed Whether the sender was closed, which is then why a transient error was not retried.
 */
export function failedError(
  settings: RetrySettings,
  batch: Batch,
  cause: unknown,
  retriable: boolean,
  closed: boolean,
  now: number,
): TributaryError {
  const what = `${batch.count} record(s) for ${topicList(batch)}`;
  const detail = asError(cause).message;
  if (!retriable && !isKafkajsError(cause)) {
    // Not Kafka's answer: the producer itself failed (its thread died, a value it cannot encode).
    return new TributaryError('SEND_FAILED', `Could not write ${what}: the producer failed: ${detail} (not retried).`, {
      cause,
    });
  }
  if (!retriable) {
    return new TributaryError(
      'SEND_FAILED',
      `Kafka refused ${what}: ${detail} (not a transient error, so not retried). ` +
        'Check that the topic exists or may be auto-created, that this client may write to it, ' +
        `and that no record exceeds the topic's max.message.bytes (batch.size is ${settings.batchSizeBytes} bytes).`,
      { cause },
    );
  }
  const why = closed
    ? 'the producer was closed'
    : batch.requests > settings.retries
      ? `retries=${settings.retries} is used up`
      : `delivery.timeout.ms=${settings.deliveryTimeoutMs} would pass before the next attempt`;
  return new TributaryError(
    'SEND_FAILED',
    `Could not write ${what}: gave up after ${now - batch.createdAt} ms and ${batch.requests} request(s) because ${why}; ` +
      `last error: ${detail}. Check that the brokers in bootstrap.servers are up and reachable from this worker ` +
      'and that every partition has a leader (and enough in-sync replicas for acks=all); raise delivery.timeout.ms, ' +
      'or leave it unset to retry until the brokers answer, to ride out longer outages.',
    { cause },
  );
}

/** The error for the records of a batch whose `delivery.timeout.ms` passed while it waited for a (re-)send. */
export function expiredError(settings: RetrySettings, batch: Batch, now: number): TributaryError {
  if (wasSent(batch)) {
    return new TributaryError(
      'SEND_FAILED',
      `Could not write ${batch.count} record(s) for ${topicList(batch)}: delivery.timeout.ms=${settings.deliveryTimeoutMs} ` +
        `passed before they could be sent again (after ${now - batch.createdAt} ms and ${batch.requests} request(s)); ` +
        'they may or may not have been written. Check that the brokers in bootstrap.servers are up and reachable from this worker.',
    );
  }
  return new TributaryError(
    'SEND_FAILED',
    `Could not write ${batch.count} record(s) for ${topicList(batch)}: not sent within delivery.timeout.ms=` +
      `${settings.deliveryTimeoutMs} (waited ${now - batch.createdAt} ms behind earlier batches being retried). ` +
      'Check that the brokers in bootstrap.servers are up and reachable from this worker.',
  );
}

/** The error for the records of a batch still held or in flight when the sender was closed. */
export function closedError(batch: Batch): TributaryError {
  return new TributaryError(
    'SEND_FAILED',
    `The Kafka producer was closed before ${batch.count} record(s) for ${topicList(batch)} were acknowledged; ` +
      'they may or may not have been written. Call flush() before close() to wait for them.',
  );
}

/** The error for a record handed to `send` after `close`. */
export function sentAfterCloseError(topic: string): TributaryError {
  return new TributaryError(
    'SEND_FAILED',
    `A record for topic '${topic}' was sent after the Kafka producer was closed; it was not written.`,
  );
}
