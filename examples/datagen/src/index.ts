export {
  type DatagenConfig,
  DatagenConnector,
  type DatagenOffset,
  type DatagenPartition,
  DatagenTask,
  type DatagenTaskConfig,
} from './datagen-connector.js';
export { IsSequence, SampleTransform } from './sample-transform.js';
