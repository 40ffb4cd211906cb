/**
 * KIP-976 cluster-wide logger levels through a real config topic: when the distributed herder
 * applies them. The status topic and the group are stand-ins (the status store's start is held
 * to open the window under test); the config topic and its records are Kafka's.
 */
import { expect, it } from 'vitest';
import { systemClock } from '../../src/api/clock.js';
import { isTributaryError } from '../../src/api/errors.js';
import type { Logger } from '../../src/api/logger.js';
import { DistributedHerder } from '../../src/runtime/distributed/distributed-herder.js';
import type { StatusTopicStore, WorkerGroup } from '../../src/runtime/distributed/ports.js';
import { Worker } from '../../src/runtime/worker.js';
import { KafkaConfigTopicStore } from '../../src/storage/kafka-config-topic-store.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';
import { waitFor } from '../helpers/child-output.js';
import { describeKafka, testKafka, uniqueTopic } from '../helpers/kafka.js';

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet };

describeKafka('cluster-wide logger levels (KIP-976) on a distributed herder', () => {
  it('applies each level read after the config topic was read once, those read while the worker still started too', async () => {
    const kafka = testKafka();
    const topic = uniqueTopic('kip976-cfg');
    const configStore = new KafkaConfigTopicStore({ kafka, topic, logger: quiet });
    const writer = new KafkaConfigTopicStore({ kafka, topic, logger: quiet });
    let releaseStatus = () => {};
    const statusHeld = new Promise<void>((resolve) => {
      releaseStatus = resolve;
    });
    const status = { start: () => statusHeld, stop: async () => {} } as unknown as StatusTopicStore;
    const group = {
      start: async () => {},
      requestRejoin() {},
      lastConfirmedAt: () => 0,
      leave: async () => {},
    } as unknown as WorkerGroup;
    const applied: Array<[string, string]> = [];
    const worker = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
      logger: quiet,
    });
    const herder = new DistributedHerder({
      worker,
      configStore,
      statusStore: status,
      group,
      identity: () => ({ workerId: 'w1:1', url: 'http://w1:1' }),
      maxDelayMs: 0,
      sessionTimeoutMs: 10_000,
      leaderWaitMs: 1000,
      restartRemoteTask: async () => {},
      logger: quiet,
      onLoggerLevel: (namespace, level) => void applied.push([namespace, level]),
    });
    await writer.start();
    try {
      // Written before the herder starts: not applied, as Kafka Connect ignores its initial read.
      await writer.putLoggerLevel('before.start', 'WARN');
      const refused = await herder.setClusterLoggerLevel('too.early', 'DEBUG').catch((e: unknown) => e);
      expect(isTributaryError(refused) && refused.code).toBe('REBALANCE_IN_PROGRESS');
      expect((refused as Error).message).toContain('this worker is still starting (reading the config topic)');
      const starting = herder.start();
      // The config topic is read; the status topic is not yet: a level written now must not be lost.
      await waitFor(() => configStore.snapshot().offset > 0n, 15_000, 'the config store read its topic');
      await writer.putLoggerLevel('while.starting', 'DEBUG');
      await waitFor(() => configStore.snapshot().loggerLevels.length === 1, 15_000, 'the record read');
      releaseStatus();
      await starting;
      await waitFor(() => applied.length === 1, 15_000, 'the level applied');
      await herder.setClusterLoggerLevel('after.start', 'ERROR');
      await waitFor(() => applied.length === 2, 15_000, 'the second level applied');
      expect(applied).toEqual([
        ['while.starting', 'DEBUG'],
        ['after.start', 'ERROR'],
      ]);
    } finally {
      releaseStatus();
      await herder.stop().catch(() => {});
      await writer.stop();
    }
    const late = await herder.setClusterLoggerLevel('too.late', 'DEBUG').catch((e: unknown) => e);
    expect(isTributaryError(late) && late.code).toBe('WORKER_STOPPING');
  }, 60_000);
});
