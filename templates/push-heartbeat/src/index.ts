export type { Change, ChangeListener, ChangeSource, ChangeStream } from './change-source.js';
export { type ChangesConfig, changesConfig } from './changes-config.js';
export { ChangesConnector } from './changes-connector.js';
export { type ChangeSourceFactory, type ChangesOffset, type ChangesPartition, ChangesTask } from './changes-task.js';
export { SimulatedChangeSource, type SimulatedChangeSourceOptions } from './simulated-change-source.js';
