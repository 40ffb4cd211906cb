import { describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import type { ConfigError } from '../../src/api/errors.js';
import { validateConnectorConfig } from '../../src/runtime/connector-config.js';
import { resolveTransactionSettings, transactionalId, workerExactlyOnce } from '../../src/runtime/exactly-once-settings.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';

class ExactlyOnceDatagen extends DatagenConnector {
  override exactlyOnceSupport() {
    return 'supported' as const;
  }
  override canDefineTransactionBoundaries() {
    return 'supported' as const;
  }
}
class SilentDatagen extends DatagenConnector {
  override exactlyOnceSupport() {
    return undefined;
  }
}
class UnsupportedDatagen extends DatagenConnector {
  override exactlyOnceSupport() {
    return 'unsupported' as const;
  }
}
class ThrowingDatagen extends DatagenConnector {
  override exactlyOnceSupport(): undefined {
    throw new Error('cannot tell before start');
  }
}

const ENABLED = { 'exactly.once.source.support': 'enabled' };
const base = { name: 'd', 'connector.class': 'datagen', topic: 'd', rate: '0' };

function problemsOf(connector: DatagenConnector, config: Record<string, string>, worker: Record<string, string> = ENABLED) {
  const v = validateConnectorConfig(connector, { ...base, ...config }, worker);
  return v.ok ? [] : v.problems;
}

describe('worker exactly.once.source.support', () => {
  it('is off unless set to enabled, and off changes nothing', () => {
    expect(workerExactlyOnce({})).toBe(false);
    expect(workerExactlyOnce({ 'exactly.once.source.support': 'disabled' })).toBe(false);
    expect(workerExactlyOnce(ENABLED)).toBe(true);
    expect(resolveTransactionSettings({}, { 'transaction.boundary': 'interval' })).toBeUndefined();
  });

  it('refuses preparing and unknown values, naming the key and what is accepted', () => {
    expect(() => workerExactlyOnce({ 'exactly.once.source.support': 'preparing' })).toThrow(/preparing.*set enabled or disabled/);
    try {
      workerExactlyOnce({ 'exactly.once.source.support': 'on' });
      expect.unreachable();
    } catch (e) {
      expect((e as ConfigError).code).toBe('CONFIG_INVALID');
      expect((e as Error).message).toMatch(/exactly\.once\.source\.support.*disabled \| enabled \| preparing/);
    }
  });

  it('makes Worker.start fail on a bad value before anything starts', async () => {
    const w = new Worker({
      config: { 'exactly.once.source.support': 'preparing' },
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => DatagenConnector,
    });
    await expect(w.start()).rejects.toThrow(/exactly\.once\.source\.support=preparing/);
  });
});

describe('connector exactly-once settings (KIP-618 preflight checks)', () => {
  it('accepts the defaults on any connector, with exactly-once on or off', () => {
    expect(problemsOf(new DatagenConnector(), {})).toEqual([]);
    expect(problemsOf(new DatagenConnector(), {}, {})).toEqual([]);
  });

  it('refuses exactly.once.support=required when the connector says it cannot deliver exactly once', () => {
    const problems = problemsOf(new UnsupportedDatagen(), { 'exactly.once.support': 'required' });
    expect(problems).toHaveLength(1);
    expect(problems[0]?.key).toBe('exactly.once.support');
    expect(problems[0]?.message).toMatch(/cannot deliver exactly once/);
  });

  it('refuses exactly.once.support=required when the connector does not say (exactlyOnceSupport() undefined), as Kafka Connect does', () => {
    const problems = problemsOf(new SilentDatagen(), { 'exactly.once.support': 'required' });
    expect(problems.map((p) => p.key)).toEqual(['exactly.once.support']);
    expect(problems[0]?.message).toMatch(/returns undefined/);
  });

  it('refuses exactly.once.support=required with the reason when exactlyOnceSupport() throws', () => {
    const problems = problemsOf(new ThrowingDatagen(), { 'exactly.once.support': 'required' });
    expect(problems[0]?.message).toMatch(/cannot tell before start/);
  });

  it('accepts exactly.once.support=required from a connector that supports it', () => {
    expect(problemsOf(new ExactlyOnceDatagen(), { 'exactly.once.support': 'required' })).toEqual([]);
  });

  it('refuses exactly.once.support=required on a worker without exactly-once, where Kafka Connect would ignore it', () => {
    const problems = problemsOf(new ExactlyOnceDatagen(), { 'exactly.once.support': 'required' }, {});
    expect(problems.map((p) => p.key)).toEqual(['exactly.once.support']);
    expect(problems[0]?.message).toMatch(/set exactly\.once\.source\.support=enabled/);
  });

  it('refuses transaction.boundary=connector unless canDefineTransactionBoundaries() says supported', () => {
    const problems = problemsOf(new DatagenConnector(), { 'transaction.boundary': 'connector' });
    expect(problems.map((p) => p.key)).toEqual(['transaction.boundary']);
    expect(problemsOf(new ExactlyOnceDatagen(), { 'transaction.boundary': 'connector' })).toEqual([]);
  });

  it('refuses bad values, an interval without the interval boundary, and an offsets.storage.topic that is not a topic name', () => {
    const keys = (c: Record<string, string>) => problemsOf(new ExactlyOnceDatagen(), c).map((p) => p.key);
    expect(keys({ 'transaction.boundary': 'batch' })).toEqual(['transaction.boundary']);
    expect(keys({ 'exactly.once.support': 'always' })).toEqual(['exactly.once.support']);
    expect(keys({ 'transaction.boundary': 'interval', 'transaction.boundary.interval.ms': '0' })).toEqual([
      'transaction.boundary.interval.ms',
    ]);
    expect(keys({ 'transaction.boundary.interval.ms': '1000' })).toEqual(['transaction.boundary.interval.ms']);
    expect(keys({ 'offsets.storage.topic': 'my offsets' })).toEqual(['offsets.storage.topic']);
    expect(keys({ 'offsets.storage.topic': '' })).toEqual(['offsets.storage.topic']);
    expect(keys({ 'offsets.storage.topic': 'x'.repeat(250) })).toEqual(['offsets.storage.topic']);
  });

  it('accepts a connector-specific offsets.storage.topic with exactly-once on and off (as Kafka Connect does)', () => {
    expect(problemsOf(new DatagenConnector(), { 'offsets.storage.topic': 'my-offsets' })).toEqual([]);
    expect(problemsOf(new DatagenConnector(), { 'offsets.storage.topic': 'my.offsets_1' }, {})).toEqual([]);
  });

  it('resolves the interval boundary, defaulting its interval to offset.flush.interval.ms', () => {
    expect(
      resolveTransactionSettings({ ...ENABLED, 'offset.flush.interval.ms': '7000' }, { 'transaction.boundary': 'interval' }),
    ).toEqual({
      boundary: 'interval',
      intervalMs: 7000,
    });
    expect(
      resolveTransactionSettings(ENABLED, { 'transaction.boundary': 'interval', 'transaction.boundary.interval.ms': '250' }),
    ).toEqual({
      boundary: 'interval',
      intervalMs: 250,
    });
    expect(resolveTransactionSettings(ENABLED, {})?.boundary).toBe('poll');
  });

  it('names transactional ids as Kafka Connect does, with the offsets topic standing in for the group of a standalone worker', () => {
    expect(transactionalId({ 'group.id': 'connect-cluster' }, 'connect-offsets', 'files', 2)).toBe('connect-cluster-files-2');
    expect(transactionalId({}, 'connect-offsets', 'files', 0)).toBe('connect-offsets-files-0');
  });
});

describe('worker create and validate with exactly.once.support=required', () => {
  function worker(cls: typeof DatagenConnector) {
    return new Worker({
      config: ENABLED,
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => cls,
    });
  }

  it('refuses to create a connector that cannot deliver exactly once, and creates nothing', async () => {
    const w = worker(UnsupportedDatagen);
    await w.start();
    await expect(w.createConnector('d', { ...base, 'exactly.once.support': 'required' })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/exactly\.once\.support=required/),
    });
    expect(w.connector('d')).toBeUndefined();
    await w.stop();
  });

  it('reports the problem on the exactly.once.support key in validate', async () => {
    const w = worker(UnsupportedDatagen);
    await w.start();
    const report = await w.validateConfig('datagen', { ...base, 'exactly.once.support': 'required' });
    expect(report.errorCount).toBe(1);
    const key = report.keys.find((k) => k.name === 'exactly.once.support');
    expect(key?.errors[0]).toMatch(/cannot deliver exactly once/);
    expect(report.keys.find((k) => k.name === 'transaction.boundary')?.value).toBe('poll');
    await w.stop();
  });

  it('fails the task with a clear error when the sender is not transactional, and closes that sender', async () => {
    let closed = 0;
    const sender = new MockSender(systemClock);
    const w = new Worker({
      config: ENABLED,
      offsetStore: new MemoryOffsetStore(),
      createSender: async ({ exactlyOnce }) => {
        expect(exactlyOnce).toBe(true);
        return { send: (r, cb) => sender.send(r, cb), flush: () => sender.flush(), close: async () => void closed++ };
      },
      loadConnector: async () => ExactlyOnceDatagen,
    });
    await w.start();
    // As any task that cannot be started: FAILED with the reason, the connector created and kept.
    await w.createConnector('d', base);
    expect(w.connectorStatus('d').tasks).toEqual([
      expect.objectContaining({ id: 0, state: 'FAILED', trace: expect.stringMatching(/needs a transactional Kafka sender/) }),
    ]);
    expect(closed).toBe(1);
    await w.stop();
  });
});
