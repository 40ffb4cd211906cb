/**
 * Boolean worker settings (topic.tracking.enable, topic.tracking.allow.reset,
 * topic.creation.enable) are parsed as Kafka Connect's ConfigDef BOOLEAN: "true" / "false",
 * trimmed, in any case; anything else stops the worker at start, naming key, value and what is
 * accepted. A "FALSE" must switch the feature off, never leave it on.
 */
import { mkdtemp } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import { parseConfigBoolean } from '../../src/api/config-def.js';
import { silentLogger } from '../../src/api/logger.js';
import { kafkaAdapters } from '../../src/cli/kafka-adapters.js';
import { KafkajsSender } from '../../src/kafka/kafkajs-sender.js';
import { ThreadedKafkajs } from '../../src/kafka/kafkajs-thread.js';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import { DistributedHerder } from '../../src/runtime/distributed/distributed-herder.js';
import type { ConfigTopicStore, StatusTopicStore, WorkerGroup } from '../../src/runtime/distributed/ports.js';
import { Worker } from '../../src/runtime/worker.js';
import { checkWorkerBooleans, workerBoolean } from '../../src/runtime/worker-booleans.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';

const KEYS = ['topic.tracking.enable', 'topic.tracking.allow.reset', 'topic.creation.enable', 'sender.thread'] as const;

function worker(config: Record<string, string>) {
  const sender = new MockSender(systemClock);
  const w = new Worker({
    config: { 'offset.flush.interval.ms': '100', ...config },
    offsetStore: new MemoryOffsetStore(),
    createSender: async () => sender,
    loadConnector: async () => DatagenConnector,
  });
  return { w, sender };
}

const gen = { 'connector.class': 'datagen', topic: 'd', rate: '0', 'max.records': '3' };

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('boolean worker settings', () => {
  it('parse as Kafka Connect does: true or false, trimmed, in any case; nothing else', () => {
    for (const v of ['true', 'TRUE', ' True ', '\ttrue\n']) expect(parseConfigBoolean(v)).toBe(true);
    for (const v of ['false', 'FALSE', ' False ', 'fAlSe']) expect(parseConfigBoolean(v)).toBe(false);
    for (const v of ['no', 'yes', 'flase', '0', '1', '', 'off', 'true false']) expect(parseConfigBoolean(v)).toBeUndefined();
    expect(workerBoolean({}, 'topic.tracking.allow.reset')).toBe(true);
    expect(workerBoolean({ 'topic.tracking.allow.reset': ' FALSE ' }, 'topic.tracking.allow.reset')).toBe(false);
  });

  it.each(KEYS)('refuse a bad %s at worker start, naming key, value and accepted values', async (key) => {
    for (const bad of ['no', 'flase', '']) {
      const { w } = worker({ [key]: bad });
      await expect(w.start()).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
        problems: [
          `Invalid value "${bad}" for configuration ${key}: Expected value to be either true or false (case-insensitive; leave it out for the default, ${workerBoolean({}, key)})`,
        ],
      });
    }
    const { w } = worker({ [key]: ' FALSE ' });
    await w.start();
    await w.stop();
  });

  it('list every bad key in one error', () => {
    expect(() => checkWorkerBooleans({ 'topic.tracking.enable': 'yes', 'topic.creation.enable': 'off' })).toThrow(
      /topic\.tracking\.enable.*topic\.creation\.enable/,
    );
  });

  it('topic.tracking.allow.reset=FALSE refuses a reset (standalone worker)', async () => {
    const { w } = worker({ 'topic.tracking.allow.reset': 'FALSE' });
    await w.start();
    await w.createConnector('c', gen);
    expect(() => w.resetConnectorTopics('c')).toThrow(expect.objectContaining({ code: 'TOPIC_TRACKING_DISABLED' }));
    expect(w.connectorTopics('c')).toEqual(expect.any(Array));
    await w.stop();
  });

  it('topic.tracking.enable=False turns tracking off: no topic remembered, topics and reset refused', async () => {
    const { w, sender } = worker({ 'topic.tracking.enable': 'False' });
    await w.start();
    await w.createConnector('c', gen);
    await until(() => sender.sent.length === 3, 'three records');
    await new Promise((r) => setTimeout(r, 50));
    expect([...(w.connector('c')?.activeTopics ?? [])]).toEqual([]);
    expect(() => w.connectorTopics('c')).toThrow(expect.objectContaining({ code: 'TOPIC_TRACKING_DISABLED' }));
    expect(() => w.resetConnectorTopics('c')).toThrow(expect.objectContaining({ code: 'TOPIC_TRACKING_DISABLED' }));
    await w.stop();
  });

  it('topic.tracking.enable=TRUE keeps tracking on', async () => {
    const { w, sender } = worker({ 'topic.tracking.enable': 'TRUE', 'topic.tracking.allow.reset': ' true' });
    await w.start();
    await w.createConnector('c', gen);
    await until(() => sender.sent.length === 3 && w.connectorTopics('c').length > 0, 'a tracked topic');
    expect(w.connectorTopics('c')).toEqual(['d']);
    w.resetConnectorTopics('c');
    expect(w.connectorTopics('c')).toEqual([]);
    await w.stop();
  });

  it('distributed herder: FALSE turns tracking and its reset off', async () => {
    const herder = (config: Record<string, string>) => {
      const { w } = worker(config);
      const resets: string[] = [];
      const configStore = { snapshot: () => ({ connectors: new Map([['c', gen]]) }) } as unknown as ConfigTopicStore;
      const statusStore = {
        topics: () => new Set(['d']),
        resetTopics: async (name: string) => {
          resets.push(name);
        },
      } as unknown as StatusTopicStore;
      const h = new DistributedHerder({
        worker: w,
        configStore,
        statusStore,
        group: {} as WorkerGroup,
        identity: () => ({ workerId: 'w1:8083', url: 'http://w1:8083' }),
        maxDelayMs: 0,
        sessionTimeoutMs: 10_000,
        leaderWaitMs: 1000,
        restartRemoteTask: async () => {},
        logger: silentLogger,
      });
      return { h, resets };
    };
    const noReset = herder({ 'topic.tracking.allow.reset': 'FALSE' });
    expect(noReset.h.connectorTopics('c')).toEqual(['d']);
    await expect(noReset.h.resetConnectorTopics('c')).rejects.toMatchObject({ code: 'TOPIC_TRACKING_DISABLED' });
    expect(noReset.resets).toEqual([]);
    const off = herder({ 'topic.tracking.enable': ' FALSE ' });
    expect(() => off.h.connectorTopics('c')).toThrow(expect.objectContaining({ code: 'TOPIC_TRACKING_DISABLED' }));
    await expect(off.h.resetConnectorTopics('c')).rejects.toMatchObject({ code: 'TOPIC_TRACKING_DISABLED' });
    const on = herder({ 'topic.tracking.allow.reset': 'True' });
    await on.h.resetConnectorTopics('c');
    expect(on.resets).toEqual(['c']);
  });
});

/** The Kafka adapters of a worker with `extra` settings, a broker that is never reached and a file offset store. */
async function adapters(extra: Record<string, string>) {
  const dir = await mkdtemp(join(tmpdir(), 'tributary-bool-'));
  return kafkaAdapters(
    { 'bootstrap.servers': '127.0.0.1:1', 'offset.storage.file.filename': join(dir, 'offsets'), ...extra },
    silentLogger,
  );
}

describe('topic.creation.enable in the Kafka adapters', () => {
  const connectorConfig = {
    'heartbeat.interval.ms': '1000',
    'topic.creation.default.partitions': '3',
    'topic.creation.default.replication.factor': '1',
  };

  it('refuses a bad value (and a bad topic.tracking.* one) before any client connects', async () => {
    await expect(adapters({ 'topic.creation.enable': 'flase' })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('Invalid value "flase" for configuration topic.creation.enable'),
    });
    await expect(adapters({ 'topic.tracking.allow.reset': 'no' })).rejects.toMatchObject({
      message: expect.stringContaining('Invalid value "no" for configuration topic.tracking.allow.reset'),
    });
  });

  it('FALSE turns topic creation off; TRUE and the default keep it on', async () => {
    const ensure = vi.spyOn(TopicAdmin.prototype, 'ensureTopics').mockResolvedValue([]);
    vi.spyOn(TopicAdmin.prototype, 'close').mockResolvedValue();
    const specFor = async (extra: Record<string, string>) => {
      ensure.mockClear();
      const a = await adapters(extra);
      await a.prepareTopics?.({ connector: 'c', heartbeatTopic: 'hb', connectorConfig });
      await a.close();
      return ensure.mock.calls[0]?.[1];
    };
    expect(await specFor({ 'topic.creation.enable': 'FALSE' })).toEqual({});
    expect(await specFor({ 'topic.creation.enable': ' False ' })).toEqual({});
    expect(await specFor({ 'topic.creation.enable': 'TRUE' })).toMatchObject({ partitions: 3, replicationFactor: 1 });
    expect(await specFor({})).toMatchObject({ partitions: 3, replicationFactor: 1 });
  });
});

describe('sender.thread in the Kafka adapters', () => {
  it('refuses a bad value, and the key beside sender=librdkafka, where it would do nothing', async () => {
    await expect(adapters({ 'sender.thread': 'ture' })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining('Invalid value "ture" for configuration sender.thread'),
    });
    for (const value of ['true', 'false']) {
      await expect(adapters({ sender: 'librdkafka', 'sender.thread': value })).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining('sender.thread applies to the kafkajs sender only'),
      });
    }
  });

  it('puts the kafkajs producer on a thread with TRUE (the default with more than one CPU); FALSE keeps it on the main thread', async () => {
    vi.spyOn(KafkajsSender.prototype, 'connect').mockResolvedValue();
    vi.spyOn(KafkajsSender.prototype, 'close').mockResolvedValue();
    const threaded = vi.spyOn(ThreadedKafkajs.prototype, 'producer');
    const onThread = async (extra: Record<string, string>) => {
      threaded.mockClear();
      const a = await adapters(extra);
      const sender = await a.createSender({
        connector: 'c',
        taskId: 0,
        connectorConfig: {},
        exactlyOnce: false,
        offsetStore: undefined,
      });
      await sender.close();
      await a.close();
      return threaded.mock.calls.length > 0;
    };
    expect(await onThread({})).toBe(availableParallelism() > 1);
    expect(await onThread({ 'sender.thread': ' TRUE ' })).toBe(true);
    expect(await onThread({ 'sender.thread': 'False' })).toBe(false);
  });
});
