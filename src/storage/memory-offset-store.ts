import { canonicalJson } from '../api/canonical-json.js';
import type { JsonObject, OffsetEntry, OffsetStore } from '../runtime/ports.js';

/**
 * Offsets held in memory, keyed like Kafka Connect's offsets topic. Used by the mock runtime
 * and as the base of the file store.
 */
export class MemoryOffsetStore implements OffsetStore {
  /** connector -> canonical partition JSON -> entry */
  protected readonly data = new Map<string, Map<string, { partition: JsonObject; offset: JsonObject }>>();

  async start(): Promise<void> {}

  async read(connector: string): Promise<OffsetEntry[]> {
    return [...(this.data.get(connector)?.values() ?? [])].map((e) => ({ partition: e.partition, offset: e.offset }));
  }

  async write(connector: string, entries: readonly OffsetEntry[]): Promise<void> {
    this.apply(connector, entries);
  }

  async connectors(): Promise<string[]> {
    return [...this.data.keys()];
  }

  async stop(): Promise<void> {}

  /** Applies entries in order: later ones win, a null offset removes the partition. */
  protected apply(connector: string, entries: readonly OffsetEntry[]): void {
    let partitions = this.data.get(connector);
    for (const entry of entries) {
      const key = canonicalJson(entry.partition);
      if (entry.offset === null) {
        partitions?.delete(key);
        continue;
      }
      if (!partitions) {
        partitions = new Map();
        this.data.set(connector, partitions);
      }
      partitions.set(key, { partition: structuredClone(entry.partition), offset: structuredClone(entry.offset) });
    }
    if (partitions?.size === 0) this.data.delete(connector);
  }
}
