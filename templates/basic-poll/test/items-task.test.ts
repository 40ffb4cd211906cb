import { MockRuntime } from 'tributary-connect/testing';
import { describe, expect, it } from 'vitest';
import { type ItemsConfig, ItemsTask } from '../src/index.js';
import { FakeItemsApi } from './fake-items-api.js';

const config: ItemsConfig = { url: 'http://localhost:8080/items', topic: 'items', 'batch.size': 10, 'poll.interval.ms': 5000 };

describe('ItemsTask', () => {
  it('once caught up, asks again only every poll.interval.ms and picks up new items', async () => {
    const api = new FakeItemsApi();
    api.add(3);
    const run = await MockRuntime.start(() => new ItemsTask(() => api), { config });
    await run.advanceBy('1s');
    expect(run.records('items').map((r) => r.key)).toEqual(['1', '2', '3']);
    const calls = api.calls;
    api.add(2);
    await run.advanceBy('3s');
    expect(api.calls).toBe(calls);
    await run.advanceBy('2s');
    expect(run.records('items').map((r) => r.sourceOffset.id)).toEqual([1, 2, 3, 4, 5]);
    await run.flush();
    expect(await run.committedOffset({ url: config.url })).toEqual({ id: 5 });
    await run.stop();
  });

  it('runs on the built-in demo stand-in for a demo: url: five items at once, then one per second', async () => {
    const demo: ItemsConfig = { ...config, url: 'demo:items', 'poll.interval.ms': 1000 };
    const run = await MockRuntime.start(ItemsTask, { config: demo });
    await run.advanceBy('100ms');
    expect(run.records('items').map((r) => r.sourceOffset.id)).toEqual([1, 2, 3, 4, 5]);
    await run.advanceBy('3s');
    expect(run.records('items').map((r) => r.sourceOffset.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    await run.stop();
  });
});
