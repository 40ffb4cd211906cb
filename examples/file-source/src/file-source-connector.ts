import { SourceConnector } from 'tributary';
import { type FileSourceConfig, fileSourceConfig } from './file-source-config.js';
import { type FileOffset, type FilePartition, FileSourceTask } from './file-source-task.js';

/**
 * Reads lines of files into a topic, like Kafka Connect's FileStreamSource: one record per
 * line, the byte position per file as offset. `tasks.max` spreads the files over tasks.
 */
export class FileSourceConnector extends SourceConnector<FileSourceConfig, FileSourceConfig, FilePartition, FileOffset> {
  readonly config = fileSourceConfig;
  readonly taskClass = FileSourceTask;
  override readonly version = '0.1.0';

  /** One task per file, up to `maxTasks`; files are dealt out in turn. */
  taskConfigs(maxTasks: number, settings: FileSourceConfig): FileSourceConfig[] {
    const { files } = settings;
    const tasks = Math.min(maxTasks, files.length);
    return Array.from({ length: tasks }, (_, task) => ({
      ...settings,
      files: files.filter((_, i) => i % tasks === task),
    }));
  }
}
