import { canonicalJson } from '../api/canonical-json.js';
import type { JsonObject, OffsetEntry, OffsetStore } from '../runtime/ports.js';

/** A store that can give the offsets-topic records of a write (see KafkaOffsetStore.offsetMessages). */
interface OffsetRecords {
  readonly topic: string;
  offsetMessages(connector: string, entries: readonly OffsetEntry[]): Array<{ key: string; value: string | null }>;
}

function hasOffsetRecords(store: OffsetStore): store is OffsetStore & OffsetRecords {
  const s = store as Partial<OffsetRecords>;
  return typeof s.topic === 'string' && typeof s.offsetMessages === 'function';
}

/** Options of {@link ConnectorOffsetStore}. */
export interface ConnectorOffsetStoreOptions {
  /** The connector's own store (its `offsets.storage.topic`); started and stopped with this one. */
  readonly own: OffsetStore;
  /** The worker's store (`offset.storage.topic`); started and stopped by the worker, not here. */
  readonly global: OffsetStore;
}

/**
 * The offsets of a connector with its own `offsets.storage.topic` (KIP-618), as Kafka Connect's
 * ConnectorOffsetBackingStore does it:
 *
 * - `read`: the connector's topic and the worker's global topic, the connector's value winning
 *   for a source partition found in both (so a connector moved to its own topic resumes from the
 *   global topic's offsets until it has written its own).
 * - `write`: every entry to the connector's topic; a null offset (partition removed) to the
 *   global topic first as well, so that the global value cannot come back once the connector's
 *   topic no longer has one. Writes take effect in call order.
 *
 * @example
 * ```ts
 * import { MemoryOffsetStore } from 'tributary-connect/runtime';
 * const global = new MemoryOffsetStore();
 * const store = new ConnectorOffsetStore({ own: new MemoryOffsetStore(), global });
 * await store.start();
 * await global.write('files', [{ partition: { file: 'a' }, offset: { line: 3 } }]);
 * await store.read('files'); // [{ partition: { file: 'a' }, offset: { line: 3 } }]
 * ```
 */
export class ConnectorOffsetStore implements OffsetStore {
  readonly own: OffsetStore;
  readonly global: OffsetStore;
  private writes: Promise<void> = Promise.resolve();

  constructor(options: ConnectorOffsetStoreOptions) {
    this.own = options.own;
    this.global = options.global;
  }

  /** Starts the connector's own store (for a Kafka topic: creates it compacted if missing, reads it). */
  start(): Promise<void> {
    return this.own.start();
  }

  /** Stops the connector's own store; the global one is the worker's. */
  stop(): Promise<void> {
    return this.own.stop();
  }

  async read(connector: string): Promise<OffsetEntry[]> {
    const [global, own] = await Promise.all([this.global.read(connector), this.own.read(connector)]);
    const merged = new Map<string, OffsetEntry>();
    for (const entry of global) merged.set(canonicalJson(entry.partition), entry);
    for (const entry of own) merged.set(canonicalJson(entry.partition), entry);
    return [...merged.values()];
  }

  write(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
    // One write at a time: a write is two writes (global tombstones, then the connector's
    // topic), and a later write must not overtake an earlier one in either store.
    const next = this.writes.then(async () => {
      const tombstones = entries.filter((e) => e.offset === null);
      if (tombstones.length > 0) await this.global.write(connector, tombstones);
      await this.own.write(connector, entries);
    });
    this.writes = next.catch(() => {});
    return next;
  }

  async partitions(connector: string): Promise<JsonObject[]> {
    const list = async (store: OffsetStore) =>
      store.partitions ? store.partitions(connector) : (await store.read(connector)).map((e) => e.partition);
    const [global, own] = await Promise.all([list(this.global), list(this.own)]);
    const merged = new Map<string, JsonObject>();
    for (const partition of [...global, ...own]) merged.set(canonicalJson(partition), partition);
    return [...merged.values()];
  }

  async connectors(): Promise<string[]> {
    const [global, own] = await Promise.all([this.global.connectors(), this.own.connectors()]);
    return [...new Set([...own, ...global])];
  }

  /**
   * The offsets-topic records of a write, for a transactional producer that writes them in the
   * same transaction as the task's records: every entry to the connector's topic, a null
   * offset also to the global topic. Both stores must be Kafka topics (KafkaOffsetStore).
   */
  offsetMessages(
    connector: string,
    entries: readonly OffsetEntry[],
  ): Array<{ topic: string; key: string; value: string | null }> {
    const own = this.own;
    const global = this.global;
    if (!hasOffsetRecords(own) || !hasOffsetRecords(global)) {
      throw new Error('ConnectorOffsetStore.offsetMessages needs Kafka offset stores (KafkaOffsetStore) on both sides');
    }
    const tombstones = entries.filter((e) => e.offset === null);
    return [
      ...global.offsetMessages(connector, tombstones).map((m) => ({ topic: global.topic, ...m })),
      ...own.offsetMessages(connector, entries).map((m) => ({ topic: own.topic, ...m })),
    ];
  }
}
