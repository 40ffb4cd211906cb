import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/api/errors.js';
import { silentLogger } from '../../src/api/logger.js';
import { ConnectorOffsetStores } from '../../src/runtime/connector-offset-stores.js';
import { MemoryOffsetStore } from '../../src/storage/memory-offset-store.js';

/** A memory store that notes when it is started and stopped. */
class NotedStore extends MemoryOffsetStore {
  constructor(
    readonly topic: string,
    private readonly events: string[],
  ) {
    super();
  }
  override async start(): Promise<void> {
    this.events.push(`start ${this.topic}`);
  }
  override async stop(): Promise<void> {
    this.events.push(`stop ${this.topic}`);
  }
}

function stores(events: string[], withFactory = true) {
  const worker = new MemoryOffsetStore();
  const own = new ConnectorOffsetStores(
    {
      config: { 'offset.storage.topic': 'connect-offsets' },
      offsetStore: worker,
      ...(withFactory ? { connectorOffsetStore: ({ topic }) => new NotedStore(topic, events) } : {}),
    },
    silentLogger,
  );
  return { worker, own };
}

describe('connector offset stores', () => {
  it("use the worker's store without offsets.storage.topic, or with the worker's own topic", async () => {
    const events: string[] = [];
    const { worker, own } = stores(events);
    await (await own.use('c', { 'offsets.storage.topic': 'connect-offsets' }))(true);
    expect(own.storeOf('c')).toBe(worker);
    expect(events).toEqual([]);
  });

  it("start a connector's own topic store before it is used, and stop it when the connector goes", async () => {
    const events: string[] = [];
    const { worker, own } = stores(events);
    const release = await own.use('c', { 'offsets.storage.topic': 'c-offsets' });
    expect(events).toEqual(['start c-offsets']);
    expect(own.storeOf('c')).not.toBe(worker);
    await release(true);
    await own.drop('c');
    expect(events).toEqual(['start c-offsets', 'stop c-offsets']);
    expect(own.storeOf('c')).toBe(worker);
  });

  it('go back to the store they had, and stop the new one, when the change is undone', async () => {
    const events: string[] = [];
    const { own } = stores(events);
    await (await own.use('c', { 'offsets.storage.topic': 'a' }))(true);
    const before = own.storeOf('c');
    await (await own.use('c', { 'offsets.storage.topic': 'b' }))(false);
    expect(own.storeOf('c')).toBe(before);
    expect(events).toEqual(['start a', 'start b', 'stop b']);
  });

  it('refuse a connector offsets topic on a worker that keeps offsets outside Kafka', async () => {
    const { own } = stores([], false);
    await expect(own.use('c', { 'offsets.storage.topic': 'c-offsets' })).rejects.toBeInstanceOf(ConfigError);
  });
});
