import type { Item, ItemsApi } from '../src/index.js';

/** An in-memory stand-in for the API: items 1, 2, 3, ... added by the test. */
export class FakeItemsApi implements ItemsApi {
  readonly items: Item[] = [];
  calls = 0;

  /** Adds `count` items with the next ids. */
  add(count: number): void {
    for (let i = 0; i < count; i++) {
      const id = this.items.length + 1;
      this.items.push({ id, name: `item ${id}` });
    }
  }

  async itemsAfter(id: number, limit: number): Promise<Item[]> {
    this.calls++;
    return this.items.filter((item) => item.id > id).slice(0, limit);
  }
}
