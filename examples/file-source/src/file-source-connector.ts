import { type ExactlyOnceSupport, type OffsetChange, SourceConnector } from 'tributary-connect';
import { type FileSourceConfig, fileSourceConfig } from './file-source-config.js';
import { type FileOffset, type FilePartition, FileSourceTask } from './file-source-task.js';
import { parseFingerprint } from './tracked-file.js';

/**
 * Reads lines of files into a topic, like Kafka Connect's FileStreamSource: one record per
 * line, the byte position per file as offset. `tasks.max` spreads the files over tasks.
 */
export class FileSourceConnector extends SourceConnector<FileSourceConfig, FileSourceConfig, FilePartition, FileOffset> {
  readonly config = fileSourceConfig;
  readonly taskClass = FileSourceTask;
  override readonly version = '0.1.0';

  /** A file is read again from the committed position, so exactly-once delivery holds (KIP-618). */
  override exactlyOnceSupport(): ExactlyOnceSupport | undefined {
    return 'supported';
  }

  /** One task per file, up to `maxTasks`; files are dealt out in turn. */
  taskConfigs(maxTasks: number, settings: FileSourceConfig): FileSourceConfig[] {
    const { files } = settings;
    const tasks = Math.min(maxTasks, files.length);
    return Array.from({ length: tasks }, (_, task) => ({
      ...settings,
      files: files.filter((_, i) => i % tasks === task),
    }));
  }

  /**
   * Accepts offsets given from outside (`PATCH /offsets`, offsets at creation) only when each
   * position is a byte position: a non-negative integer. The codec takes any number, and the
   * task would start mid-line at -5 or re-read the file at 7.5. A fingerprint, when given, must
   * be `<bytes>:<sha256>` with `bytes` from 0 to the position (bytes it has read) and the SHA-256
   * in lowercase hex. A null offset (start over) is fine.
   */
  override alterOffsets(_config: FileSourceConfig, offsets: ReadonlyArray<OffsetChange<FilePartition, FileOffset>>): boolean {
    const problems = offsets.flatMap(({ partition, offset }) => {
      if (offset === null) return [];
      const file = `of file ${JSON.stringify(partition.filename)}`;
      const { position, fingerprint } = offset;
      if (!isBytePosition(position))
        return [`offset.position ${file}: expected a byte position (an integer >= 0), got ${position}`];
      if (fingerprint === undefined) return [];
      const parsed = parseFingerprint(fingerprint);
      if (parsed === undefined) {
        return [
          `offset.fingerprint ${file}: expected <bytes>:<sha256>, the number of first bytes hashed and their SHA-256 as 64 lowercase hex digits, got ${JSON.stringify(fingerprint)}`,
        ];
      }
      if (parsed.bytes > position) {
        return [
          `offset.fingerprint ${file}: it hashes the first ${parsed.bytes} bytes, more than the position (${position}) has read`,
        ];
      }
      return [];
    });
    if (problems.length > 0) throw new Error(problems.join('; '));
    return true;
  }
}

const isBytePosition = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;
