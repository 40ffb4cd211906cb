import { describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { systemClock } from '../../src/api/clock.js';
import type { OffsetEntry } from '../../src/runtime/ports.js';
import { Worker } from '../../src/runtime/worker.js';
import { ConnectorOffsetStore } from '../../src/storage/connector-offset-store.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';
import { MockSender } from '../../src/testing/mock-sender.js';

const a = { file: 'a' };
const b = { file: 'b' };

function layers() {
  const global = new MemoryOffsetStore();
  const own = new MemoryOffsetStore();
  return { global, own, store: new ConnectorOffsetStore({ own, global }) };
}

const sorted = (entries: OffsetEntry[]) =>
  [...entries].sort((x, y) => JSON.stringify(x.partition).localeCompare(JSON.stringify(y.partition)));

describe('ConnectorOffsetStore (a connector-specific offsets.storage.topic over the global one)', () => {
  it("reads the connector's topic first and falls back to the global topic per partition", async () => {
    const { global, own, store } = layers();
    await global.write('files', [
      { partition: a, offset: { line: 1 } },
      { partition: b, offset: { line: 7 } },
    ]);
    await own.write('files', [{ partition: a, offset: { line: 5 } }]);
    expect(sorted(await store.read('files'))).toEqual([
      { partition: a, offset: { line: 5 } },
      { partition: b, offset: { line: 7 } },
    ]);
  });

  it("writes offsets to the connector's topic only, and a removal to both topics so the global value cannot come back", async () => {
    const { global, own, store } = layers();
    await global.write('files', [{ partition: a, offset: { line: 1 } }]);
    await store.write('files', [{ partition: b, offset: { line: 2 } }]);
    expect(await global.read('files')).toEqual([{ partition: a, offset: { line: 1 } }]);
    expect(await own.read('files')).toEqual([{ partition: b, offset: { line: 2 } }]);
    await store.write('files', [{ partition: a, offset: null }]);
    expect(await global.read('files')).toEqual([]);
    expect(await store.read('files')).toEqual([{ partition: b, offset: { line: 2 } }]);
  });

  it('applies writes in call order even when the global write of an earlier one is slow', async () => {
    const { own } = layers();
    let release: () => void = () => {};
    const slowGlobal = new MemoryOffsetStore();
    const original = slowGlobal.write.bind(slowGlobal);
    slowGlobal.write = async (c, e) => {
      await new Promise<void>((r) => {
        release = r;
      });
      return original(c, e);
    };
    const ordered = new ConnectorOffsetStore({ own, global: slowGlobal });
    const first = ordered.write('files', [{ partition: a, offset: null }]);
    const second = ordered.write('files', [{ partition: a, offset: { line: 9 } }]);
    await new Promise((r) => setTimeout(r, 0));
    release();
    await Promise.all([first, second]);
    expect(await own.read('files')).toEqual([{ partition: a, offset: { line: 9 } }]);
  });

  it('lists the partitions and connectors of both topics', async () => {
    const { global, own, store } = layers();
    await global.write('files', [{ partition: a, offset: { line: 1 } }]);
    await own.write('files', [
      { partition: a, offset: { line: 2 } },
      { partition: b, offset: { line: 3 } },
    ]);
    await global.write('other', [{ partition: a, offset: { line: 1 } }]);
    expect(await store.partitions('files')).toEqual([a, b]);
    expect((await store.connectors()).sort()).toEqual(['files', 'other']);
  });
});

describe('Worker with a connector-specific offsets.storage.topic', () => {
  const pa = { task: 0, sequence: 0 };
  const pb = { task: 1, sequence: 0 };
  const base = { name: 'd', 'connector.class': 'datagen', topic: 'd', rate: '0' };

  it('refuses the setting with a clear error when offsets are not in Kafka (no connectorOffsetStore)', async () => {
    const w = new Worker({
      config: {},
      offsetStore: new MemoryOffsetStore(),
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => DatagenConnector,
    });
    await w.start();
    await expect(w.createConnector('d', { ...base, 'offsets.storage.topic': 'd-offsets' })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/offsets\.storage\.topic=d-offsets.*not in Kafka/),
    });
    expect(w.connector('d')).toBeUndefined();
    await w.stop();
  });

  it("starts the connector's store, serves the offsets endpoints from it, and stops it when the connector is deleted", async () => {
    const global = new MemoryOffsetStore();
    const own = new MemoryOffsetStore();
    const events: string[] = [];
    own.start = async () => void events.push('start');
    own.stop = async () => void events.push('stop');
    const w = new Worker({
      config: {},
      offsetStore: global,
      connectorOffsetStore: ({ connector, topic }) => {
        events.push(`${connector}:${topic}`);
        return new ConnectorOffsetStore({ own, global });
      },
      createSender: async () => new MockSender(systemClock),
      loadConnector: async () => DatagenConnector,
    });
    await w.start();
    await global.write('d', [{ partition: pa, offset: { seq: 1 } }]);
    await w.createConnector('d', { ...base, 'offsets.storage.topic': 'd-offsets' }, { initialState: 'STOPPED' });
    expect(events).toEqual(['d:d-offsets', 'start']);
    expect(await w.connectorOffsets('d')).toEqual([{ partition: pa, offset: { seq: 1 } }]);
    await w.alterOffsets('d', [{ partition: pb, offset: { seq: 4 } }]);
    expect(await own.read('d')).toEqual([{ partition: pb, offset: { seq: 4 } }]);
    expect(await global.read('d')).toEqual([{ partition: pa, offset: { seq: 1 } }]);
    await w.resetOffsets('d');
    expect(await w.connectorOffsets('d')).toEqual([]);
    expect(await global.read('d')).toEqual([]);
    await w.deleteConnector('d');
    expect(events).toEqual(['d:d-offsets', 'start', 'stop']);
    await w.stop();
  });
});
