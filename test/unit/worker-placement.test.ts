/**
 * Distributed mode's placement on the local Worker (Worker.place / unplace): which part of a
 * connector runs here, what the connector instance publishes, what restarts and what does not.
 */
import { describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import { configProviders } from '../../src/runtime/config-providers.js';
import type { OffsetEntry } from '../../src/runtime/ports.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';

function placedWorker() {
  let senders = 0;
  const w = new Worker({
    config: { 'offset.flush.interval.ms': '100' },
    offsetStore: new MemoryOffsetStore(),
    createSender: async () => {
      senders++;
      return new MockSender(systemClock);
    },
    loadConnector: async () => DatagenConnector,
    configProviders: configProviders(
      { 'config.providers': 'env', 'config.providers.env.class': 'env' },
      { DATAGEN_TOPIC: 'events' },
    ),
  });
  return { w, senders: () => senders };
}

const REF = ['$', '{env:DATAGEN_TOPIC}'].join('');
const config = { 'connector.class': 'datagen', topic: REF, 'tasks.max': '2', rate: '1' };

describe('Worker.place (distributed mode)', () => {
  it('runs the connector instance only where placed, which publishes its task configs with references put back', async () => {
    const { w } = placedWorker();
    await w.start();
    const published: unknown[][] = [];
    const runner = await w.place('gen', config, 'RUNNING', {
      runsConnector: true,
      tasks: new Map(),
      publishTaskConfigs: async (c) => {
        published.push(c);
      },
    });
    expect(runner.tasks).toEqual([]);
    expect(published).toHaveLength(1);
    // The resolved topic ("events") is stored as the reference it came from.
    expect(published[0]?.map((c) => (c as { topic: string }).topic)).toEqual([REF, REF]);
    await w.stop();
  });

  it('runs placed tasks with references resolved, and does not restart them when the same placement comes again', async () => {
    const { w, senders } = placedWorker();
    await w.start();
    const stored = { ...config, name: 'gen', task: 1 };
    const placement = {
      runsConnector: false,
      tasks: new Map<number, unknown>([[1, stored]]),
      publishTaskConfigs: async () => {},
    };
    const runner = await w.place('gen', config, 'RUNNING', placement);
    expect(runner.tasks.map((t) => t.id)).toEqual([1]);
    expect(runner.tasks[0]?.config).toMatchObject({ topic: 'events' });
    const first = runner.tasks[0];
    // The same config again (a config-topic record of another connector, a rebalance): nothing restarts.
    await w.place('gen', config, 'RUNNING', { ...placement, tasks: new Map([[1, { ...stored }]]) });
    expect(runner.tasks[0]).toBe(first);
    expect(senders()).toBe(1);
    // A changed task config restarts that task.
    await w.place('gen', config, 'RUNNING', { ...placement, tasks: new Map([[1, { ...stored, rate: 2 }]]) });
    expect(runner.tasks[0]).not.toBe(first);
    expect(senders()).toBe(2);
    await w.stop();
  });

  it('publishes zero task configs when STOPPED, also on a worker the stopped connector moved to', async () => {
    const { w } = placedWorker();
    await w.start();
    const published: unknown[][] = [];
    await w.place('gen', config, 'STOPPED', {
      runsConnector: true,
      tasks: new Map(),
      publishTaskConfigs: async (c) => {
        published.push(c);
      },
    });
    expect(published).toEqual([[]]);
    await w.unplace('gen');
    expect(w.connectorNames()).toEqual([]);
    await w.stop();
  });

  it('marks a placed task FAILED with the reason when it cannot be created, without failing the others', async () => {
    let calls = 0;
    const w = new Worker({
      config: { 'offset.flush.interval.ms': '100' },
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => {
        calls++;
        if (calls === 1) throw new Error('no producer for you');
        return new MockSender(systemClock);
      },
      loadConnector: async () => DatagenConnector,
    });
    await w.start();
    const plain = { 'connector.class': 'datagen', topic: 't', 'tasks.max': '2', rate: '1' };
    const runner = await w.place('gen', plain, 'RUNNING', {
      runsConnector: false,
      tasks: new Map<number, unknown>([
        [0, { ...plain, name: 'gen', task: 0 }],
        [1, { ...plain, name: 'gen', task: 1 }],
      ]),
      publishTaskConfigs: async () => {},
    });
    const status = runner.status();
    expect(status.tasks.map((t) => [t.id, t.state])).toEqual([
      [0, 'FAILED'],
      [1, 'RUNNING'],
    ]);
    expect(status.tasks[0]?.trace).toContain('no producer for you');
    await w.stop();
  });
  it('a final offset flush that fails while the herder stops the worker makes stop() reject; one at a rebalance does not', async () => {
    class BreakableStore extends MemoryOffsetStore {
      broken = false;
      override async write(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
        if (this.broken) throw new Error('offsets topic unavailable');
        await super.write(connector, entries);
      }
    }
    const run = async (stopping: boolean) => {
      const store = new BreakableStore();
      const sender = new MockSender(systemClock);
      const w = new Worker({
        config: { 'offset.flush.interval.ms': '600000', 'offset.flush.timeout.ms': '500' },
        offsetStore: store,
        createSender: async () => sender,
        loadConnector: async () => DatagenConnector,
      });
      await w.start();
      const placed = { ...config, topic: 'd', 'max.records': '5', rate: '0', 'tasks.max': '1' };
      let published: unknown[] = [];
      const placement = {
        runsConnector: true,
        tasks: new Map<number, unknown>(),
        publishTaskConfigs: async (c: unknown[]) => {
          published = c;
        },
      };
      await w.place('gen', placed, 'RUNNING', placement);
      // As the cluster does: the published task config comes back as this worker's task.
      await w.place('gen', placed, 'RUNNING', { ...placement, tasks: new Map([[0, published[0]]]) });
      const deadline = Date.now() + 5000;
      while (sender.sent.length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(sender.sent).toHaveLength(5);
      store.broken = true;
      // As DistributedHerder.stop does: beginStop, then reconcile unplaces every connector.
      if (stopping) w.beginStop();
      await w.unplace('gen');
      return w.stop().then(
        () => undefined,
        (e: unknown) => e,
      );
    };
    const error = await run(true);
    expect(error).toMatchObject({ code: 'OFFSET_FLUSH_FAILED' });
    expect((error as Error).message).toContain('gen-0');
    expect((error as Error).message).toContain('offsets topic unavailable');
    // A connector moved away at a rebalance: logged by the task, not the worker's exit status.
    expect(await run(false)).toBeUndefined();
  }, 20_000);
});

describe('WorkerOptions.checkClientConfig', () => {
  const check = (c: Readonly<Record<string, string>>) =>
    c['producer.override.lingr.ms'] === undefined
      ? []
      : [
          {
            key: 'producer.override.lingr.ms',
            message: 'producer.override.lingr.ms: unknown producer setting; did you mean producer.override.linger.ms?',
          },
        ];
  const typo = { 'connector.class': 'datagen', topic: 'events', rate: '1', 'producer.override.lingr.ms': '5' };

  it('refuses a create or an update, and reports at the key in validate, but does not refuse a stored config placed or checked', async () => {
    const w = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => DatagenConnector,
      checkClientConfig: check,
    });
    await w.start();
    try {
      await expect(w.createConnector('c', typo)).rejects.toThrow(
        "Invalid config of connector 'c': producer.override.lingr.ms: unknown producer setting; did you mean producer.override.linger.ms?",
      );
      const report = await w.validateConfig('datagen', { name: 'c', ...typo });
      expect(report.keys.find((k) => k.name === 'producer.override.lingr.ms')?.errors).toEqual([
        'producer.override.lingr.ms: unknown producer setting; did you mean producer.override.linger.ms?',
      ]);
      // Distributed mode: a create or update checks with clients; a stored config (placement,
      // inspection, offsets) does not, so it is not shown as FAILED or hidden for it.
      await expect(w.checkConnector('c', typo, 'any', 'any', { clients: true })).rejects.toThrow('lingr.ms');
      await expect(w.checkConnector('c', typo)).resolves.toMatchObject({ tasksMax: 1 });
      const runner = await w.place('c', typo, 'STOPPED', {
        runsConnector: true,
        tasks: new Map(),
        publishTaskConfigs: async () => {},
      });
      expect(runner.state).toBe('STOPPED');
      const good = { 'connector.class': 'datagen', topic: 'events', rate: '1' };
      await w.createConnector('d', good, { initialState: 'STOPPED' });
      await expect(w.putConnectorConfig('d', typo)).rejects.toThrow('lingr.ms');
    } finally {
      await w.stop();
    }
  });
});
