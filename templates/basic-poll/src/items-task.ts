import * as t from 'io-ts';
import { defer, mergeAll, type Observable } from 'rxjs';
import { offsetCodec, type SourceRecord, SourceTask, type SourceTaskContext } from 'tributary-connect';
import { DemoItemsApi } from './demo-items-api.js';
import { HttpItemsApi, type ItemsApi } from './items-api.js';
import type { ItemsConfig } from './items-config.js';

/** The source partition: the polled endpoint. */
export type ItemsPartition = { url: string };
/** How far the task got: the id of the last item written. */
export type ItemsOffset = { id: number };

/**
 * Polls the API for items after the last one written, one record per item (key: the id,
 * value: the item). Once caught up it waits `poll.interval.ms` before asking again.
 */
export class ItemsTask extends SourceTask<ItemsPartition, ItemsOffset, ItemsConfig> {
  readonly offsets = offsetCodec({
    partition: t.type({ url: t.string }),
    offset: t.type({ id: t.number }),
  });
  private config!: ItemsConfig;
  private context!: SourceTaskContext<ItemsPartition, ItemsOffset>;
  private api!: ItemsApi;
  private partition!: ItemsPartition;
  private lastId = 0;
  private nextPollAt = 0;

  /**
   * @param makeApi - how to reach the source; tests hand in a fake. By default a `demo:` url is
   *   the built-in {@link DemoItemsApi}, anything else {@link HttpItemsApi}.
   */
  constructor(
    private readonly makeApi: (config: ItemsConfig, now: () => number) => ItemsApi = (config, now) =>
      config.url.startsWith('demo:') ? new DemoItemsApi(now) : new HttpItemsApi(config.url),
  ) {
    super();
  }

  async start(config: ItemsConfig, context: SourceTaskContext<ItemsPartition, ItemsOffset>): Promise<void> {
    this.config = config;
    this.context = context;
    this.api = this.makeApi(config, () => context.clock.now());
    this.partition = { url: config.url };
    // Resume after the last item committed; nothing committed means from the start.
    this.lastId = (await context.offsets.offset(this.partition))?.id ?? 0;
  }

  poll(): Observable<SourceRecord<ItemsPartition, ItemsOffset>> {
    return defer(async () => {
      // Time comes from context.clock only, so that tests run in virtual time.
      const now = this.context.clock.now();
      if (now < this.nextPollAt) return [];
      const batch = this.config['batch.size'];
      const items = await this.api.itemsAfter(this.lastId, batch);
      if (items.length < batch) this.nextPollAt = now + this.config['poll.interval.ms'];
      return items.map((item) => {
        if (item.id <= this.lastId) {
          throw new Error(`The API returned item ${item.id} after item ${this.lastId}: ids must only grow`);
        }
        this.lastId = item.id;
        return {
          sourcePartition: this.partition,
          sourceOffset: { id: item.id },
          topic: this.config.topic,
          key: String(item.id),
          value: item,
        };
      });
    }).pipe(mergeAll());
  }
}
