import type { Item, ItemsApi } from './items-api.js';

/**
 * A built-in stand-in for your API, used when `url` starts with `demo:`, so the generated
 * project runs as its README says before you point it at a real endpoint: five items at once,
 * then one more per second, each `{ id, name, at }`.
 */
export class DemoItemsApi implements ItemsApi {
  private readonly startedAt: number;

  /** @param now - the current time in ms (the task passes its context's clock). */
  constructor(private readonly now: () => number = Date.now) {
    this.startedAt = now();
  }

  async itemsAfter(id: number, limit: number): Promise<Item[]> {
    const available = 5 + Math.floor((this.now() - this.startedAt) / 1000);
    const items: Item[] = [];
    for (let next = id + 1; next <= available && items.length < limit; next++) {
      items.push({ id: next, name: `demo item ${next}`, at: new Date(this.startedAt + (next - 5) * 1000).toISOString() });
    }
    return items;
  }
}
