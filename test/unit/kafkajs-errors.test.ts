import { afterEach, describe, expect, it } from 'vitest';
import { installKafkajsRejectionGuard } from '../../src/kafka/install-kafkajs-rejection-guard.js';
import { attemptsIn, isKafkajsError, isRetriableSendError } from '../../src/kafka/kafkajs-errors.js';
import { kafkajsError, messageTooLarge, retriesExceeded } from '../helpers/fake-kafkajs-producer.js';

describe('isRetriableSendError', () => {
  it('retries what kafkajs gave up on because a broker was unreachable', () => {
    expect(isRetriableSendError(retriesExceeded())).toBe(true);
  });

  it('retries a request timeout and a broker lock timeout wrapped as non-retriable', () => {
    const timeout = kafkajsError('KafkaJSRequestTimeoutError', 'Request Produce(key: 0, version: 7) timed out', {
      retriable: true,
    });
    expect(
      isRetriableSendError(kafkajsError('KafkaJSNonRetriableError', timeout.message, { retriable: false, cause: timeout })),
    ).toBe(true);
    expect(isRetriableSendError(kafkajsError('KafkaJSLockTimeout', 'Timeout while acquiring lock', { retriable: false }))).toBe(
      true,
    );
  });

  it('retries a retriable protocol error such as NOT_LEADER_OR_FOLLOWER', () => {
    expect(isRetriableSendError(kafkajsError('KafkaJSProtocolError', 'not leader', { retriable: true }))).toBe(true);
  });

  it("does not retry a refusal, a disconnecting producer, or an error that is not kafkajs's", () => {
    expect(isRetriableSendError(messageTooLarge())).toBe(false);
    expect(
      isRetriableSendError(kafkajsError('KafkaJSNonRetriableError', 'The producer is disconnecting', { retriable: false })),
    ).toBe(false);
    expect(isRetriableSendError(new TypeError('x'))).toBe(false);
    expect(isRetriableSendError('nope')).toBe(false);
  });

  it('counts the requests kafkajs made', () => {
    expect(attemptsIn(retriesExceeded())).toBe(6);
    expect(attemptsIn(messageTooLarge())).toBe(1);
    expect(isKafkajsError(retriesExceeded())).toBe(true);
  });
});

describe('installKafkajsRejectionGuard', () => {
  let uninstall: (() => void) | undefined;
  afterEach(() => uninstall?.());

  it('routes unhandled kafkajs rejections to the callback and stops when uninstalled', () => {
    const seen: Error[] = [];
    const before = process.listenerCount('unhandledRejection');
    uninstall = installKafkajsRejectionGuard((e) => seen.push(e));
    expect(process.listenerCount('unhandledRejection')).toBe(before + 1);
    const e = retriesExceeded();
    process.emit('unhandledRejection', e, Promise.resolve());
    expect(seen).toEqual([e]);
    uninstall();
    uninstall();
    expect(process.listenerCount('unhandledRejection')).toBe(before);
  });

  it('leaves other rejections to the other listeners', () => {
    const seen: Error[] = [];
    uninstall = installKafkajsRejectionGuard((e) => seen.push(e));
    // Vitest has its own listener, so the guard must neither swallow nor re-throw this one.
    expect(() => process.emit('unhandledRejection', new Error('not kafka'), Promise.resolve())).not.toThrow();
    expect(seen).toEqual([]);
  });
});
