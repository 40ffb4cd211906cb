export { type FileSourceConfig, fileSourceConfig } from './file-source-config.js';
export { FileSourceConnector } from './file-source-connector.js';
export {
  type FileOffset,
  type FilePartition,
  FileSourceTask,
  MAX_ROUND_BYTES,
  READ_BUFFER_BYTES,
} from './file-source-task.js';
export { type LineSink, type ReadBudget, TrackedFile, type TrackedFileOptions } from './tracked-file.js';
