export { DemoItemsApi } from './demo-items-api.js';
export { HttpItemsApi, type Item, type ItemsApi } from './items-api.js';
export { type ItemsConfig, itemsConfig } from './items-config.js';
export { ItemsConnector } from './items-connector.js';
export { type ItemsOffset, type ItemsPartition, ItemsTask } from './items-task.js';
