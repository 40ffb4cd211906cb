/** One item of the polled API: a numeric id that only grows, and whatever else it carries. */
export interface Item {
  readonly id: number;
  readonly [field: string]: unknown;
}

/** What the task needs from the outside system: up to `limit` items after an id, oldest first. */
export interface ItemsApi {
  itemsAfter(id: number, limit: number): Promise<Item[]>;
}

/**
 * {@link ItemsApi} over HTTP: `GET <url>?after=<id>&limit=<limit>` answering a JSON array of
 * items. Replace it with a client of your own system.
 */
export class HttpItemsApi implements ItemsApi {
  constructor(private readonly url: string) {}

  async itemsAfter(id: number, limit: number): Promise<Item[]> {
    const url = new URL(this.url);
    url.searchParams.set('after', String(id));
    url.searchParams.set('limit', String(limit));
    const response = await fetch(url);
    if (!response.ok) throw new Error(`GET ${url} answered ${response.status} ${response.statusText}`);
    const body: unknown = await response.json();
    if (!Array.isArray(body) || !body.every((item) => typeof item?.id === 'number')) {
      throw new Error(`GET ${url} must answer a JSON array of items with a numeric "id"`);
    }
    return body as Item[];
  }
}
