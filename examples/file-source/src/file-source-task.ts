import * as t from 'io-ts';
import { concat, defer, from, mergeMap, type Observable, throwError } from 'rxjs';
import { offsetCodec, type SourceLag, type SourceRecord, SourceTask, type SourceTaskContext } from 'tributary-connect';
import type { FileSourceConfig } from './file-source-config.js';
import { type FilePosition, parseFingerprint, type ReadBudget, TrackedFile } from './tracked-file.js';

/** A file source partition: one file, by the name it was configured with (as Kafka Connect's FileStreamSource). */
export type FilePartition = { filename: string };
/**
 * How far into a file: the byte position just after the last line written, and the
 * fingerprint of the file's first bytes up to there, `<bytes>:<sha256 in hex>` (absent from
 * offsets written before it existed, or given from outside without it: the position is then
 * taken as it is).
 */
export type FileOffset = { fingerprint?: string | undefined; position: number };

/** Bytes of lines one poll round reads at most, whatever `batch.size` allows. */
export const MAX_ROUND_BYTES = 4 * 1024 * 1024;
/** Size of the read buffer a task shares between its files. */
export const READ_BUFFER_BYTES = 64 * 1024;

/**
 * Reads lines of its files and writes one record per line: the line as a string value, no key,
 * partition `{ filename }`, offset `{ position, fingerprint }` (the byte after the line's newline,
 * and what identifies the file). Resumes after the committed position of each file, or from its
 * start when it is another file now; see the README for truncated and replaced files.
 */
export class FileSourceTask extends SourceTask<FilePartition, FileOffset, FileSourceConfig> {
  readonly offsets = offsetCodec({
    partition: t.type({ filename: t.string }),
    // Flat, keys in sorted order, one t.type (an absent fingerprint is undefined): the runtime's
    // per-record copy of an offset is then one object and no sort, and io-ts's encode the
    // identity (an intersection's builds a merged copy of every offset).
    offset: t.type({ fingerprint: t.union([t.string, t.undefined]), position: t.number }),
  });
  private config!: FileSourceConfig;
  private files: TrackedFile[] = [];
  /** Which file a round starts with, so that no file starves the others. */
  private next = 0;
  /** One partition object per file, shared by its records. */
  private readonly partitions = new Map<string, FilePartition>();

  private partitionOf(filename: string): FilePartition {
    let p = this.partitions.get(filename);
    if (p === undefined) {
      p = { filename };
      this.partitions.set(filename, p);
    }
    return p;
  }

  async start(config: FileSourceConfig, context: SourceTaskContext<FilePartition, FileOffset>): Promise<void> {
    this.config = config;
    const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    for (const filename of config.files) {
      const file = new TrackedFile(filename, {
        follow: config.follow,
        encoding: config.encoding,
        pollIntervalMs: config['poll.interval.ms'],
        maxLineBytes: config['max.line.bytes'],
        buffer,
        clock: context.clock,
        logger: context.logger,
      });
      this.files.push(file);
      await file.open(filePosition(filename, await context.offsets.offset({ filename })));
    }
  }

  poll(): Observable<SourceRecord<FilePartition, FileOffset>> {
    return defer(() => this.readRound()).pipe(
      // Lines read before an error are still written (and their offsets committed), then the task fails.
      mergeMap(({ records, error }) =>
        error === undefined
          ? from(records)
          : concat(
              from(records),
              throwError(() => error),
            ),
      ),
    );
  }

  /** Source lag: the bytes of its files not yet read. */
  override async sourceLag(): Promise<SourceLag> {
    const unread = await Promise.all(this.files.map((f) => f.unreadBytes()));
    return { position: unread.reduce((a, b) => a + b, 0), unit: 'bytes' };
  }

  override async stop(): Promise<void> {
    await Promise.all(this.files.map((f) => f.close()));
  }

  private async readRound(): Promise<{ records: Array<SourceRecord<FilePartition, FileOffset>>; error?: unknown }> {
    const records: Array<SourceRecord<FilePartition, FileOffset>> = [];
    const budget: ReadBudget = { lines: this.config['batch.size'], bytes: MAX_ROUND_BYTES };
    const count = this.files.length;
    const topic = this.config.topic;
    let error: unknown;
    try {
      for (let i = 0; i < count && budget.lines > 0 && budget.bytes > 0; i++) {
        const file = this.files[(this.next + i) % count] as TrackedFile;
        const sourcePartition = this.partitionOf(file.filename);
        // Each line becomes its record here: no intermediate line object.
        await file.readInto((value, position, fingerprint) => {
          records.push({ sourcePartition, sourceOffset: { fingerprint: fingerprint.text, position }, topic, value });
        }, budget);
      }
    } catch (e) {
      error = e;
    }
    this.next = (this.next + 1) % count;
    return error === undefined ? { records } : { records, error };
  }
}

/** Where to resume `filename` from its committed offset; a fingerprint that is not one is an error naming it. */
function filePosition(filename: string, offset: FileOffset | undefined): FilePosition | undefined {
  if (offset === undefined) return undefined;
  if (offset.fingerprint === undefined) return { position: offset.position };
  const fingerprint = parseFingerprint(offset.fingerprint);
  if (fingerprint === undefined) {
    throw new Error(
      `The committed offset of file ${filename} has fingerprint ${JSON.stringify(offset.fingerprint)}: expected <bytes>:<SHA-256 as 64 lowercase hex digits>. Set the offset again (PATCH /offsets) without a fingerprint, or with a valid one`,
    );
  }
  return { position: offset.position, fingerprint };
}
