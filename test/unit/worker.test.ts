import { describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import { Worker } from '../../src/runtime/worker.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';

function worker(store = new MemoryOffsetStore()) {
  const sender = new MockSender(systemClock);
  const w = new Worker({
    config: { 'offset.flush.interval.ms': '100' },
    offsetStore: store,
    createSender: async () => sender,
    loadConnector: async (spec) => {
      if (spec !== 'datagen') throw new Error(`unknown ${spec}`);
      return DatagenConnector;
    },
  });
  return { w, store, sender };
}

const config = (extra: Record<string, string> = {}) => ({
  'connector.class': 'datagen',
  topic: 'd',
  rate: '0',
  'max.records': '5',
  ...extra,
});

describe('Worker', () => {
  it('runs a connector to completion and keeps offsets after delete', async () => {
    const { w, store } = worker();
    await w.start();
    await w.createConnector('gen', config());
    await new Promise((r) => setTimeout(r, 300));
    await w.deleteConnector('gen');
    expect(await store.read('gen')).toEqual([{ partition: { sequence: 0, task: 0 }, offset: { seq: 5 } }]);
  });

  it('rejects a bad config listing every problem, and registers nothing', async () => {
    const { w } = worker();
    await w.start();
    await expect(w.createConnector('gen', config({ rate: 'fast', 'tasks.max': '0', topic: '' }))).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      problems: expect.arrayContaining([
        'Invalid configuration rate: expected integer >= 0, got "fast"',
        'Invalid configuration tasks.max: expected integer >= 1, got 0',
      ]),
    });
    expect(w.connectorNames()).toEqual([]);
  });

  it('refuses a second connector of the same name, also while the first is being created', async () => {
    const { w } = worker();
    await w.start();
    const results = await Promise.allSettled([w.createConnector('gen', config()), w.createConnector('gen', config())]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toMatchObject({ code: 'CONNECTOR_EXISTS' });
    await w.stop();
  });

  it('creates with initial offsets (KIP-995): old offsets of the name are wiped, the given ones start the tasks', async () => {
    const store = new MemoryOffsetStore();
    await store.write('gen', [
      { partition: { task: 0, sequence: 0 }, offset: { seq: 1 } },
      { partition: { task: 0, sequence: 9 }, offset: { seq: 1 } },
    ]);
    const { w, sender } = worker(store);
    await w.start();
    await w.createConnector('gen', config({ 'max.records': '3' }), {
      offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 100 } }],
      initialState: 'STOPPED',
    });
    expect(w.connector('gen')?.state).toBe('STOPPED');
    expect(await store.read('gen')).toEqual([{ partition: { sequence: 0, task: 0 }, offset: { seq: 100 } }]);
    await w.connector('gen')?.transition('RUNNING');
    await new Promise((r) => setTimeout(r, 300));
    await w.stop();
    expect(sender.sent.map((r) => JSON.parse(String(r.value)).seq)).toEqual([101, 102, 103]);
  });

  it('validates every offset before writing anything, and leaves nothing behind on failure', async () => {
    const store = new MemoryOffsetStore();
    await store.write('gen', [{ partition: { task: 0, sequence: 0 }, offset: { seq: 7 } }]);
    const { w } = worker(store);
    await w.start();
    await expect(
      w.createConnector('gen', config(), {
        offsets: [
          { partition: { task: 0, sequence: 0 }, offset: { seq: 1 } },
          { partition: { task: 'zero', sequence: 0 }, offset: { seq: 'x' } },
        ],
      }),
    ).rejects.toMatchObject({
      code: 'OFFSET_DECODE',
      message: expect.stringMatching(
        /offsets\[1\]\.partition\.task: expected number, got "zero".*offsets\[1\]\.offset\.seq: expected number, got "x"/,
      ),
    });
    expect(w.connectorNames()).toEqual([]);
    expect(await store.read('gen')).toEqual([{ partition: { task: 0, sequence: 0 }, offset: { seq: 7 } }]);
  });

  it('removes the offsets it wrote when a later step fails', async () => {
    const store = new MemoryOffsetStore();
    const { w } = worker(store);
    await w.start();
    const original = w.connector.bind(w);
    let failTransition = true;
    const proto = Object.getPrototypeOf(await w.createConnector('probe', config({ 'max.records': '0' })));
    const transition = proto.transition;
    proto.transition = async function (this: unknown, target: string) {
      if (failTransition && target === 'RUNNING') throw new Error('injected failure at step 5');
      return transition.call(this, target);
    };
    try {
      await expect(
        w.createConnector('gen', config(), { offsets: [{ partition: { task: 0, sequence: 0 }, offset: { seq: 3 } }] }),
      ).rejects.toThrow('injected failure at step 5');
    } finally {
      failTransition = false;
      proto.transition = transition;
    }
    expect(original('gen')).toBeUndefined();
    expect(await store.read('gen')).toEqual([]);
    await w.stop();
  });
});
