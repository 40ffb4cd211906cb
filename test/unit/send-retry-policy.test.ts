import { describe, expect, it } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import { newBatch } from '../../src/kafka/kafkajs-batch.js';
import {
  backoffMs,
  closedError,
  expiredError,
  failedError,
  isExpired,
  mayResend,
  type RetrySettings,
} from '../../src/kafka/send-retry-policy.js';
import { kafkajsError, messageTooLarge } from '../helpers/fake-kafkajs-producer.js';

const settings: RetrySettings = {
  retries: 3,
  retryBackoffMs: 100,
  retryBackoffMaxMs: 1000,
  deliveryTimeoutMs: 10_000,
  batchSizeBytes: 1024,
};

function batchOf(records: number, topics: readonly string[], createdAt = 0) {
  const batch = newBatch(createdAt);
  for (const topic of topics) batch.entries.push({ topic, messages: [], callbacks: [] });
  batch.count = records;
  return batch;
}

describe('send retry policy', () => {
  it('backs off exponentially from retry.backoff.ms up to retry.backoff.max.ms', () => {
    expect([0, 1, 2, 3, 4, 10].map((n) => backoffMs(settings, n))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('expires a batch once delivery.timeout.ms has passed since its first record', () => {
    const batch = batchOf(1, ['t'], 5000);
    expect(isExpired(settings, batch, 14_999)).toBe(false);
    expect(isExpired(settings, batch, 15_000)).toBe(true);
  });

  it('re-sends while retries is not used up and the re-send comes before delivery.timeout.ms', () => {
    const batch = batchOf(1, ['t']);
    batch.requests = 3;
    expect(mayResend(settings, batch, 0, 100)).toBe(true);
    batch.requests = 4;
    expect(mayResend(settings, batch, 0, 100)).toBe(false);
    batch.requests = 1;
    expect(mayResend(settings, batch, 9_900, 100)).toBe(false);
    expect(mayResend(settings, batch, 9_899, 100)).toBe(true);
  });

  it('says why a transient failure was given up: retries used up, the deadline, or a closed producer', () => {
    const batch = batchOf(2, ['a']);
    batch.requests = 4;
    const cause = new Error('broker down');
    expect(failedError(settings, batch, cause, true, false, 50).message).toContain('retries=3 is used up');
    batch.requests = 1;
    expect(failedError(settings, batch, cause, true, false, 50).message).toContain(
      'delivery.timeout.ms=10000 would pass before the next attempt',
    );
    const closed = failedError(settings, batch, cause, true, true, 50);
    expect(closed.message).toMatch(
      /^Could not write 2 record\(s\) for topic 'a': gave up after 50 ms and 1 request\(s\) because the producer was closed; last error: broker down/,
    );
    expect(isTributaryError(closed) && closed.code).toBe('SEND_FAILED');
    expect(closed.cause).toBe(cause);
  });

  it("tells Kafka's refusal from a failure of the producer itself", () => {
    const batch = batchOf(1, ['a', 'b']);
    const refused = messageTooLarge();
    expect(failedError(settings, batch, refused, false, false, 0).message).toMatch(
      /^Kafka refused 1 record\(s\) for topics 'a', 'b': .*batch.size is 1024 bytes/,
    );
    expect(failedError(settings, batch, new TypeError('cannot encode'), false, false, 0).message).toBe(
      "Could not write 1 record(s) for topics 'a', 'b': the producer failed: cannot encode (not retried).",
    );
    expect(failedError(settings, batch, kafkajsError('KafkaJSProtocolError', 'Not authorized'), false, false, 0).message).toMatch(
      /^Kafka refused 1 record\(s\) for topics 'a', 'b': Not authorized/,
    );
  });

  it('says whether an expired batch may have been written: only if some dispatch of it was sent', () => {
    const batch = batchOf(3, ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
    expect(expiredError(settings, batch, 12_000).message).toContain(
      "for topics 'a', 'b', 'c', 'd', 'e' and 2 more: not sent within delivery.timeout.ms=10000 (waited 12000 ms",
    );
    batch.attempt = 2;
    batch.unsent = 1;
    expect(expiredError(settings, batch, 12_000).message).toContain('they may or may not have been written');
    batch.unsent = 2;
    expect(expiredError(settings, batch, 12_000).message).toContain('not sent within');
  });

  it('tells records held at close to flush first', () => {
    expect(closedError(batchOf(4, ['t'])).message).toContain('Call flush() before close()');
  });
});
