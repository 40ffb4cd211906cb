/**
 * The read_committed filter of a fetched partition, as Kafka's Java consumer applies it
 * (`CompletedFetch`): what the kafkajs fixes (src/kafka/kafkajs-fixes.ts) put in place of kafkajs
 * 2.2.4's `consumer/filterAbortedMessages.js`, which every kafkajs consumer's `Batch` runs on the
 * records of each partition of each Fetch response.
 *
 * kafkajs's module assumes the broker lists a fetch's aborted transactions in the order of their
 * first offsets, and takes one entry of that list per record, whatever the record. The broker
 * lists them in the order of their ABORT markers (its index of aborted transactions is by
 * marker), so when the aborted transactions of two producers overlap in a partition (A begins, B
 * begins, B aborts, A aborts), kafkajs meets A's first offset only after B's and hands out A's
 * records as committed. It also takes any record whose key is four zero bytes for an ABORT
 * marker, a data record too.
 */

/** An aborted transaction of a Fetch response's partition, as kafkajs decodes it (int64s as decimal text). */
export interface AbortedTransaction {
  readonly producerId: string;
  readonly firstOffset: string;
}

/** What the filter reads of a record's batch: kafkajs's record batch decoder gives every record of a batch one such object. */
export interface FetchedBatchContext {
  /** The batch's base offset (int64 as decimal text). */
  readonly firstOffset: string;
  readonly lastOffsetDelta: number;
  /** `-1` for a batch of a producer without an id (neither idempotent nor transactional). */
  readonly producerId: string;
  /** The batch's transactional attribute. */
  readonly inTransaction: boolean;
  /** The batch's control attribute: a batch of transaction markers. */
  readonly isControlBatch?: boolean;
}

/** A record as kafkajs's decoder gives it, as far as the filter reads it. */
export interface FetchedMessage {
  /** int64 as decimal text. */
  readonly offset: string;
  readonly key?: Buffer | null;
  /** Absent on the records of a legacy (v0/v1) message set, which knows no transactions. */
  readonly batchContext?: FetchedBatchContext;
}

/** The control record type of an ABORT marker (`ControlRecordType.ABORT`). */
const ABORT = 0;

/**
 * Whether a control batch's record is an ABORT marker: its key is the control record key, a
 * version (int16, at least 0) and a type (int16), as Java's `ControlRecordType.parse` reads it
 * (any version, its type at bytes 2 and 3). A key too short to be one is not an ABORT marker.
 */
function isAbortMarker(key: Buffer | null | undefined): boolean {
  if (key == null || key.length < 4) return false;
  const bytes = Buffer.from(key);
  return bytes.readInt16BE(0) >= 0 && bytes.readInt16BE(2) === ABORT;
}

/**
 * The records of one fetched partition that a read_committed consumer may see, in their order:
 * every record except those of aborted transactions. Control records stay in (kafkajs's `Batch`
 * drops them next), as kafkajs's own module leaves them.
 *
 * The algorithm of Java's `CompletedFetch`: the aborted transactions are taken in the order of
 * their first offsets (Java keeps them in a min-heap); at each batch of a producer with an id,
 * every aborted transaction whose first offset is at or before the batch's last offset puts its
 * producer id into the set of aborted producers; a control batch whose marker is ABORT takes its
 * producer out of that set again; a transactional data batch of a producer in the set is dropped
 * whole.
 *
 * @param input.messages The records of the partition at or after the fetch offset, in offset order.
 * @param input.abortedTransactions The partition's aborted transactions, in any order (the
 *   broker lists them by ABORT marker).
 * @returns `messages` itself when there are no aborted transactions, else a new array.
 *
 * @example
 * ```ts
 * const a = { firstOffset: '0', lastOffsetDelta: 0, producerId: '7', inTransaction: true };
 * const b = { firstOffset: '1', lastOffsetDelta: 0, producerId: '8', inTransaction: true };
 * const abortB = { firstOffset: '2', lastOffsetDelta: 0, producerId: '8', inTransaction: true, isControlBatch: true };
 * const abortA = { firstOffset: '3', lastOffsetDelta: 0, producerId: '7', inTransaction: true, isControlBatch: true };
 * const marker = Buffer.from([0, 0, 0, 0]);
 * filterAbortedMessages({
 *   messages: [
 *     { offset: '0', key: null, batchContext: a },
 *     { offset: '1', key: null, batchContext: b },
 *     { offset: '2', key: marker, batchContext: abortB },
 *     { offset: '3', key: marker, batchContext: abortA },
 *   ],
 *   abortedTransactions: [{ producerId: '8', firstOffset: '1' }, { producerId: '7', firstOffset: '0' }],
 * });
 * // the two markers only: A's record at 0 and B's at 1 were aborted
 * ```
 */
export function filterAbortedMessages<M extends FetchedMessage>(input: {
  readonly messages: readonly M[];
  readonly abortedTransactions?: readonly AbortedTransaction[] | null;
}): M[] {
  const { messages, abortedTransactions } = input;
  if (abortedTransactions == null || abortedTransactions.length === 0) return messages as M[];
  const pending = abortedTransactions
    .map((t) => ({ producerId: String(t.producerId), firstOffset: BigInt(t.firstOffset) }))
    .sort((x, y) => (x.firstOffset < y.firstOffset ? -1 : x.firstOffset > y.firstOffset ? 1 : 0));
  let next = 0;
  const aborted = new Set<string>();
  const kept: M[] = [];
  let batch: FetchedBatchContext | undefined;
  let dropBatch = false;
  for (const message of messages) {
    const context = message.batchContext;
    // kafkajs's decoder gives all records of a batch the same context object, so a new object is
    // a new batch. (Were it one object per record, each record would get its batch's verdict all
    // the same: the steps below depend on the batch alone, and repeating them changes nothing.)
    if (context !== batch) {
      batch = context;
      dropBatch = false;
      if (context !== undefined && String(context.producerId) !== '-1') {
        const lastOffset = BigInt(context.firstOffset) + BigInt(context.lastOffsetDelta);
        for (let t = pending[next]; t !== undefined && t.firstOffset <= lastOffset; t = pending[++next]) {
          aborted.add(t.producerId);
        }
        const producerId = String(context.producerId);
        if (context.isControlBatch === true) {
          if (isAbortMarker(message.key)) aborted.delete(producerId);
        } else if (context.inTransaction && aborted.has(producerId)) {
          dropBatch = true;
        }
      }
    }
    if (!dropBatch) kept.push(message);
  }
  return kept;
}
