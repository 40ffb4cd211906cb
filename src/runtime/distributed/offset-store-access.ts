import type { Logger } from '../../api/logger.js';
import type { OffsetStore } from '../ports.js';
import type { Worker } from '../worker.js';

/**
 * Runs `fn` with the connector's offset store: the worker's, or (KIP-618 `offsets.storage.topic`
 * of a connector that does not run here) one opened for the call and closed after it.
 */
export async function withOffsetStore<T>(
  worker: Worker,
  log: Logger,
  name: string,
  config: Readonly<Record<string, string>>,
  fn: (store: OffsetStore) => Promise<T>,
): Promise<T> {
  const own = config['offsets.storage.topic'];
  if (own === undefined || own === worker.options.config['offset.storage.topic'] || worker.connector(name)) {
    return fn(worker.offsetStoreOf(name));
  }
  const factory = worker.options.connectorOffsetStore;
  if (factory === undefined) return fn(worker.offsetStoreOf(name));
  const store = factory({ connector: name, topic: own });
  await store.start();
  try {
    return await fn(store);
  } finally {
    await store
      .stop()
      .catch((err: unknown) =>
        log.warn({ event: 'offsets.store.stop.failed', connector: name, err }, 'stopping an offsets store failed'),
      );
  }
}
