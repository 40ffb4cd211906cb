import { describeSourceTask } from 'tributary-connect/testing';
import { ItemsConnector, ItemsTask } from '../src/index.js';
import { FakeItemsApi } from './fake-items-api.js';

const api = new FakeItemsApi();
api.add(25);

// The checks every source task should pass: config, offsets, restarts, far-future offset, stop.
describeSourceTask(() => new ItemsTask(() => api), {
  config: {
    connector: ItemsConnector,
    valid: { url: 'http://localhost:8080/items', topic: 'items', 'batch.size': '10' },
    invalid: { url: 'http://localhost:8080/items', 'batch.size': '0' },
    invalidKeys: ['topic', 'batch.size'],
  },
  farFutureOffset: () => ({ id: Number.MAX_SAFE_INTEGER }),
});
