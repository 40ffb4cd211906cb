import type { HeartbeatRecord, SourceRecord } from './source-record.js';

/**
 * What a connector says about exactly-once delivery with a given config (KIP-618's
 * `ExactlyOnceSupport`): `supported`, `unsupported`, or `undefined` when it does not know.
 * With `exactly.once.support=required`, anything but `supported` refuses the connector.
 */
export type ExactlyOnceSupport = 'supported' | 'unsupported';

/**
 * Whether a connector can define its own transaction boundaries with a given config (KIP-618's
 * `ConnectorTransactionBoundaries`). `transaction.boundary=connector` is refused unless it is
 * `supported`.
 */
export type ConnectorTransactionBoundaries = 'supported' | 'unsupported';

/**
 * Lets a task decide where transactions end, with `transaction.boundary=connector` on a worker
 * with `exactly.once.source.support=enabled` (KIP-618's `TransactionContext`). The task finds
 * it as `context.transactionContext`, which is undefined with any other boundary.
 *
 * A commit writes the records of the transaction and their source offsets to Kafka at once; an
 * abort drops them (they are never visible to a `read_committed` consumer, and their offsets
 * are not committed, so the records after them commit past them: aborting discards data on
 * purpose). Records the task emits after the request go into the next transaction.
 *
 * @example
 * ```ts
 * import * as t from 'io-ts';
 * import { of } from 'rxjs';
 * import { offsetCodec, SourceTask, type SourceTaskContext } from 'tributary-connect';
 *
 * class LinesTask extends SourceTask<{ file: string }, { line: number }, { topic: string }> {
 *   readonly offsets = offsetCodec({ partition: t.type({ file: t.string }), offset: t.type({ line: t.number }) });
 *   private tx: TransactionContext<{ file: string }, { line: number }> | undefined;
 *   start(_config: { topic: string }, context: SourceTaskContext<{ file: string }, { line: number }>) {
 *     this.tx = context.transactionContext;
 *   }
 *   poll() {
 *     const record = { sourcePartition: { file: 'a' }, sourceOffset: { line: 1 }, topic: 'lines', value: 'end of file' };
 *     this.tx?.commitTransaction(record); // the transaction ends with this record
 *     return of(record);
 *   }
 * }
 * ```
 */
export interface TransactionContext<P, O> {
  /**
   * Commits the transaction once `record` has been handed to Kafka, with `record` as its last
   * record; without `record`, at the end of the current poll round (or at once, outside a round).
   */
  commitTransaction(record?: SourceRecord<P, O> | HeartbeatRecord<P, O>): void;
  /**
   * Aborts the transaction once `record` has been handed over, `record` included; without
   * `record`, at the end of the current poll round (or at once, outside a round).
   */
  abortTransaction(record?: SourceRecord<P, O> | HeartbeatRecord<P, O>): void;
}
