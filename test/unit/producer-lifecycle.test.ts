import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isTributaryError } from '../../src/api/errors.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';
import { kafkajsProducerConfig, ProducerLifecycle } from '../../src/kafka/producer-lifecycle.js';
import { FakeKafkajsProducer } from '../helpers/fake-kafkajs-producer.js';

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

function setup(worker: Record<string, string> = {}) {
  const fake = new FakeKafkajsProducer();
  const errors: Error[] = [];
  const config = resolveProducerConfig(worker, {});
  const lifecycle = new ProducerLifecycle(fake.kafka(), config, (e) => errors.push(e));
  return { fake, lifecycle, errors };
}

describe('ProducerLifecycle', () => {
  it('leaves kafkajs at most 5 retries per call with one in flight, and none with several', () => {
    const one = kafkajsProducerConfig(resolveProducerConfig({}, {}));
    expect(one).toMatchObject({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 5, initialRetryTime: 100 } });
    const several = kafkajsProducerConfig(
      resolveProducerConfig(
        { 'producer.enable.idempotence': 'false', 'producer.max.in.flight.requests.per.connection': '5' },
        {},
      ),
    );
    expect(several).toMatchObject({ idempotent: false, maxInFlightRequests: 5, retry: { retries: 0 } });
  });

  it('goes idle → connecting → connected, and refuses a second connect() loudly', async () => {
    const { fake, lifecycle } = setup();
    expect(lifecycle.state).toBe('idle');
    const connecting = lifecycle.connect();
    expect(lifecycle.state).toBe('connecting');
    await expect(connecting).resolves.toBe(true);
    expect(lifecycle.connected).toBe(true);
    expect(fake.connects).toBe(1);
    const again = await lifecycle.connect().catch((e: unknown) => e);
    expect(isTributaryError(again) && again.code).toBe('SEND_FAILED');
    expect((again as Error).message).toContain('called while connected');
  });

  it('is idle again after a failed connect(), so that it may connect again', async () => {
    const { fake, lifecycle } = setup();
    fake.connectErrors.push(new Error('ECONNREFUSED'));
    await expect(lifecycle.connect()).rejects.toThrow('ECONNREFUSED');
    expect(lifecycle.state).toBe('idle');
    await expect(lifecycle.connect()).resolves.toBe(true);
  });

  it('disconnects a connection that completes after close', async () => {
    const { fake, lifecycle } = setup();
    let open!: () => void;
    fake.connectGate = new Promise((resolve) => {
      open = resolve;
    });
    const connecting = lifecycle.connect();
    expect(lifecycle.markClosed()).toBe(true);
    open();
    await expect(connecting).resolves.toBe(false);
    expect(fake.connected).toBe(false);
  });

  it('replaces the producer, retrying the connection with back-off, and counts the attempts', async () => {
    const { fake, lifecycle } = setup();
    await lifecycle.connect();
    lifecycle.want();
    expect(lifecycle.replacing).toBe('wanted');
    fake.connectErrors.push(new Error('down'), new Error('still down'));
    const failures: string[] = [];
    const replacing = lifecycle.replace((e) => failures.push(e.message));
    expect(lifecycle.replacing).toBe('running');
    await vi.advanceTimersByTimeAsync(0);
    expect(failures).toEqual(['down']);
    // 100 ms (retry.backoff.ms) after the first failure, then 200 ms after the second.
    await vi.advanceTimersByTimeAsync(100);
    expect(failures).toEqual(['down', 'still down']);
    await vi.advanceTimersByTimeAsync(199);
    expect(fake.connects).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await expect(replacing).resolves.toBe(3);
    expect(lifecycle.replacing).toBe('none');
    expect(fake.producers).toBe(4);
    expect(fake.connected).toBe(true);
  });

  it('stops replacing when closed during the back-off, and wants no replacement unless connected', async () => {
    const { fake, lifecycle } = setup();
    lifecycle.want();
    expect(lifecycle.replacing).toBe('none');
    await lifecycle.connect();
    fake.connectErrors.push(new Error('down'));
    const replacing = lifecycle.replace(() => {});
    await vi.advanceTimersByTimeAsync(0);
    lifecycle.markClosed();
    await expect(replacing).resolves.toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('reports a failed disconnect to onAsyncError rather than rejecting', async () => {
    const { fake, lifecycle, errors } = setup();
    await lifecycle.connect();
    fake.disconnect = async () => {
      throw new Error('socket hung');
    };
    lifecycle.markClosed();
    await expect(lifecycle.disconnect()).resolves.toBeUndefined();
    expect(errors.map((e) => e.message)).toEqual(['socket hung']);
  });
});
