import { ConfigError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import type { OffsetStore } from './ports.js';
import type { WorkerOptions } from './worker-options.js';

/**
 * Which store each connector's offsets go to: the worker's, or, for a connector with its own
 * `offsets.storage.topic` (KIP-618), a store of that topic made by
 * {@link WorkerOptions.connectorOffsetStore}, started when the connector takes the setting and
 * stopped when it drops it or goes.
 */
export class ConnectorOffsetStores {
  /** Connectors with their own `offsets.storage.topic`, and its store. */
  private readonly own = new Map<string, { topic: string; store: OffsetStore }>();

  constructor(
    private readonly options: Pick<WorkerOptions, 'config' | 'offsetStore' | 'connectorOffsetStore'>,
    private readonly log: Logger,
  ) {}

  /** The store a connector's offsets are read from and written to: its own (`offsets.storage.topic`) or the worker's. */
  storeOf(name: string): OffsetStore {
    return this.own.get(name)?.store ?? this.options.offsetStore;
  }

  /**
   * Puts in place the store of a connector's `offsets.storage.topic` (none, or the worker's own
   * topic, means the worker's store): a new topic's store is started (the topic created
   * compacted if missing) before the connector's tasks use it. Returns what to do once the
   * change has been applied (`true`: stop the store it replaced) or undone (`false`: go back to
   * it and stop the new one).
   *
   * @throws ConfigError when the connector names its own topic and this worker keeps offsets outside Kafka
   */
  async use(name: string, config: Readonly<Record<string, string>>): Promise<(applied: boolean) => Promise<void>> {
    const raw = config['offsets.storage.topic'];
    const topic = raw === undefined || raw === this.options.config['offset.storage.topic'] ? undefined : raw;
    const current = this.own.get(name);
    if (current?.topic === topic) return async () => {};
    let next: { topic: string; store: OffsetStore } | undefined;
    if (topic !== undefined) {
      const factory = this.options.connectorOffsetStore;
      if (factory === undefined) {
        throw new ConfigError(`config of connector '${name}'`, [
          `offsets.storage.topic=${topic}: this worker keeps offsets in a file (offset.storage.file.filename) or in memory, not in Kafka, so a connector cannot have its own offsets topic: remove offsets.storage.topic, or run the worker with bootstrap.servers and offset.storage.topic`,
        ]);
      }
      const store = factory({ connector: name, topic });
      await store.start();
      next = { topic, store };
    }
    const set = (entry: typeof next) => {
      if (entry === undefined) this.own.delete(name);
      else this.own.set(name, entry);
    };
    set(next);
    return async (applied) => {
      if (!applied) set(current);
      await (applied ? current : next)?.store.stop().catch((err: unknown) => {
        this.log.warn({ connector: name, event: 'offsets.store.stop.failed', err }, 'stopping an offsets store failed');
      });
    };
  }

  /** Stops and forgets the connector's own store, if it has one. */
  async drop(name: string): Promise<void> {
    const entry = this.own.get(name);
    this.own.delete(name);
    await entry?.store.stop();
  }

  /** Stops every connector's own store; a failure of one does not keep the others open. */
  async dropAll(): Promise<void> {
    await Promise.allSettled([...this.own.keys()].map((name) => this.drop(name)));
  }
}
