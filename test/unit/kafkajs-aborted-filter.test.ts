import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AbortedTransaction, filterAbortedMessages } from '../../src/kafka/kafkajs-aborted-filter.js';
import { kafkajsFixes } from '../../src/kafka/kafkajs-fixes.js';
import { original } from '../helpers/kafkajs-original.js';

const require = createRequire(import.meta.url);
const FILTER = require.resolve('kafkajs/src/consumer/filterAbortedMessages.js');
const BATCH = require.resolve('kafkajs/src/consumer/batch.js');

/** A record batch's context, as kafkajs's record batch decoder gives it to each of its records. */
interface Context {
  readonly firstOffset: string;
  readonly firstTimestamp: string;
  readonly partitionLeaderEpoch: number;
  readonly inTransaction: boolean;
  readonly isControlBatch: boolean;
  readonly lastOffsetDelta: number;
  readonly producerId: string;
  readonly producerEpoch: number;
  readonly firstSequence: number;
  readonly maxTimestamp: string;
  readonly timestampType: number;
  readonly magicByte: number;
}

/** A record, as kafkajs's record decoder gives it. */
interface Message {
  readonly magicByte: number;
  readonly attributes: number;
  readonly timestamp: string;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Record<string, Buffer>;
  readonly isControlRecord: boolean;
  readonly batchContext: Context;
}

/** What kafkajs's Fetch response decoder gives for one partition. */
interface PartitionData {
  readonly partition: number;
  readonly highWatermark: string;
  readonly abortedTransactions: AbortedTransaction[];
  readonly messages: Message[];
}

type BatchClass = new (
  topic: string,
  fetchedOffset: string,
  data: PartitionData,
) => { messages: Message[]; isEmptyDueToFiltering(): boolean; lastOffset(): string };
type Filter = (input: { messages: Message[]; abortedTransactions: AbortedTransaction[] }) => Message[];

/** A control record's key: version 0 and the type (0 ABORT, 1 COMMIT). */
const markerKey = (type: 0 | 1): Buffer => Buffer.from([0, 0, 0, type]);

/**
 * A partition's log as a broker keeps it: record batches of producers, transactional or not, and
 * the transaction markers; and, for each data record, whether it was committed.
 */
class Log {
  readonly messages: Message[] = [];
  /** Every aborted transaction, in the order of its ABORT marker (the broker's order). */
  readonly aborted: Array<{ producerId: string; firstOffset: bigint; lastOffset: bigint }> = [];
  /** The data records of aborted transactions, by offset. */
  readonly abortedOffsets = new Set<string>();
  /** Batch base offsets, in order. */
  readonly batchStarts: bigint[] = [];
  private readonly open = new Map<string, { firstOffset: bigint; offsets: string[] }>();
  private next = 0n;

  /** A batch of data records; `producerId` `-1` is a producer without an id. */
  write(producerId: string, keys: ReadonlyArray<Buffer | string | null>, transactional = true): this {
    let txn = this.open.get(producerId);
    if (transactional && txn === undefined) {
      txn = { firstOffset: this.next, offsets: [] };
      this.open.set(producerId, txn);
    }
    const context = this.context(producerId, keys.length, transactional, false);
    for (const [i, key] of keys.entries()) {
      const offset = String(this.next + BigInt(i));
      if (transactional) txn?.offsets.push(offset);
      this.messages.push(this.record(context, offset, typeof key === 'string' ? Buffer.from(key) : key, false));
    }
    this.next += BigInt(keys.length);
    return this;
  }

  /** The producer's open transaction ends: its marker batch. */
  end(producerId: string, outcome: 'commit' | 'abort'): this {
    const txn = this.open.get(producerId);
    if (txn === undefined) throw new Error(`producer ${producerId} has no open transaction`);
    this.open.delete(producerId);
    const context = this.context(producerId, 1, true, true);
    this.messages.push(this.record(context, String(this.next), markerKey(outcome === 'abort' ? 0 : 1), true));
    if (outcome === 'abort') {
      this.aborted.push({ producerId, firstOffset: txn.firstOffset, lastOffset: this.next });
      for (const o of txn.offsets) this.abortedOffsets.add(o);
    }
    this.next += 1n;
    return this;
  }

  openProducers(): string[] {
    return [...this.open.keys()];
  }

  /**
   * A Fetch response's partition from `fetchOffset` up to the batch starting at `upTo` (or the
   * end): the records at or after the fetch offset (kafkajs's Batch drops those before it from
   * a batch that starts earlier) and the aborted transactions the broker lists for that range:
   * those whose marker is at or after the fetch offset and which began before the range's end,
   * in marker order.
   */
  fetch(fetchOffset: bigint, upTo = this.next): { fetchedOffset: string; data: PartitionData } {
    const start = this.batchStarts.filter((b) => b <= fetchOffset).pop() ?? 0n;
    return {
      fetchedOffset: String(fetchOffset),
      data: {
        partition: 0,
        highWatermark: String(this.next),
        abortedTransactions: this.aborted
          .filter((t) => t.lastOffset >= fetchOffset && t.firstOffset < upTo)
          .map((t) => ({ producerId: t.producerId, firstOffset: String(t.firstOffset) })),
        messages: this.messages.filter((m) => BigInt(m.offset) >= start && BigInt(m.offset) < upTo),
      },
    };
  }

  private context(producerId: string, count: number, transactional: boolean, control: boolean): Context {
    this.batchStarts.push(this.next);
    return {
      firstOffset: String(this.next),
      firstTimestamp: '1764633600000',
      partitionLeaderEpoch: 0,
      inTransaction: transactional,
      isControlBatch: control,
      lastOffsetDelta: count - 1,
      producerId,
      producerEpoch: 0,
      firstSequence: 0,
      maxTimestamp: '1764633600000',
      timestampType: 0,
      magicByte: 2,
    };
  }

  private record(batchContext: Context, offset: string, key: Buffer | null, control: boolean): Message {
    return {
      magicByte: 2,
      attributes: 0,
      timestamp: '1764633600000',
      offset,
      key,
      value: control ? Buffer.from([0, 0, 0, 0, 0, 0]) : Buffer.from(`v${offset}`),
      headers: {},
      isControlRecord: control,
      batchContext,
    };
  }
}

/** The offsets of the records a consumer of `Batch` gets from the fetch. */
function seen(Batch: BatchClass, fetch: { fetchedOffset: string; data: PartitionData }): string[] {
  return new Batch('t', fetch.fetchedOffset, fetch.data).messages.map((m) => m.offset);
}

/** The data records at or after the fetch offset that were not aborted: what Kafka's Java consumer returns. */
function committed(log: Log, fetch: { fetchedOffset: string; data: PartitionData }): string[] {
  return fetch.data.messages
    .filter((m) => !m.isControlRecord && BigInt(m.offset) >= BigInt(fetch.fetchedOffset) && !log.abortedOffsets.has(m.offset))
    .map((m) => m.offset);
}

const kafkajsBatch = original<BatchClass>(BATCH);
const kafkajsFilter = original<Filter>(FILTER);
/** kafkajs's Batch as kafkajs loads it here: with the fixed filter (test/kafkajs-fixes-setup.ts). */
const fixedBatch = require(BATCH) as BatchClass;

/**
 * The log of the issue, as a Kafka 4.4.0 broker wrote it: producer A opens a transaction and
 * writes three records, producer B opens one and writes one, producer C writes one in a
 * transaction, B aborts, A aborts, C commits (the markers land after C's record). The broker lists
 * the aborted transactions by marker: B's, then A's.
 */
function overlapping(): Log {
  return new Log()
    .write('3', ['a1'])
    .write('3', ['a2'])
    .write('3', ['a3'])
    .write('4', ['b1'])
    .write('5', ['c1'])
    .end('4', 'abort')
    .end('3', 'abort')
    .end('5', 'commit');
}

describe("kafkajs's read_committed filter", () => {
  it('is in force as the fixed module (kafkajs-fixes)', () => {
    expect(kafkajsFixes.applied).toContain('filterAbortedMessages');
    expect(fixedBatch).not.toBe(kafkajsBatch);
  });

  it("hands out an aborted transaction's records as committed when another producer's aborted transaction began later and ended earlier (kafkajs 2.2.4)", () => {
    const log = overlapping();
    const fetch = log.fetch(0n);
    expect(fetch.data.abortedTransactions).toEqual([
      { producerId: '4', firstOffset: '3' },
      { producerId: '3', firstOffset: '0' },
    ]);
    // kafkajs 2.2.4, as published: A's three aborted records, and C's committed one.
    expect(seen(kafkajsBatch, fetch)).toEqual(['0', '1', '2', '4']);
    // As Kafka's Java consumer: C's record only.
    expect(seen(fixedBatch, fetch)).toEqual(['4']);
    expect(committed(log, fetch)).toEqual(['4']);
    // A fetch of the aborted records only: empty, and still read up to its last record, so a
    // consumer's position (kafkajs's END_BATCH_PROCESS, the TopicReader's) moves past them.
    const aborted = new fixedBatch('t', '0', log.fetch(0n, 4n).data);
    expect(aborted.messages).toEqual([]);
    expect(aborted.isEmptyDueToFiltering()).toBe(true);
    expect(aborted.lastOffset()).toBe('3');
  });

  it('takes a data record whose key is four zero bytes for an ABORT marker and hands out the rest of its aborted transaction (kafkajs 2.2.4)', () => {
    const log = new Log()
      .write('7', ['x'])
      .write('7', [Buffer.from([0, 0, 0, 0]), 'y'])
      .end('7', 'abort')
      .write('-1', ['plain']);
    const fetch = log.fetch(0n);
    expect(seen(kafkajsBatch, fetch)).toEqual(['1', '2', '4']);
    expect(seen(fixedBatch, fetch)).toEqual(['4']);
  });

  it('keeps the records of committed transactions, of non-transactional producers, and of a producer after its abort', () => {
    const log = new Log()
      .write('-1', ['n1'])
      .write('3', ['a1', 'a2'])
      .write('9', ['idempotent'], false)
      .write('4', ['b1'])
      .end('3', 'abort')
      .write('3', ['a3'])
      .end('4', 'commit')
      .end('3', 'commit')
      .write('-1', ['n2']);
    const fetch = log.fetch(0n);
    expect(seen(fixedBatch, fetch)).toEqual(['0', '3', '4', '6', '9']);
    expect(committed(log, fetch)).toEqual(['0', '3', '4', '6', '9']);
  });

  it('drops the records of a transaction that began before the fetch offset', () => {
    const log = new Log().write('3', ['a1']).write('4', ['b1']).write('3', ['a2', 'a3']).end('3', 'abort').end('4', 'commit');
    // From the middle of A's second batch: a3 only of it, and B's record.
    const fetch = log.fetch(3n);
    expect(fetch.data.abortedTransactions).toEqual([{ producerId: '3', firstOffset: '0' }]);
    expect(seen(fixedBatch, fetch)).toEqual([]);
    expect(committed(log, fetch)).toEqual([]);
    const fromB = log.fetch(1n);
    expect(seen(fixedBatch, fromB)).toEqual(['1']);
  });

  it('returns what the stock module returns when the broker lists no aborted transactions', () => {
    const log = new Log().write('3', ['a1']).end('3', 'commit').write('-1', ['n']);
    const { data } = log.fetch(0n);
    expect(filterAbortedMessages({ messages: data.messages, abortedTransactions: [] })).toBe(data.messages);
    expect(filterAbortedMessages({ messages: data.messages })).toBe(data.messages);
    expect(kafkajsFilter({ messages: data.messages, abortedTransactions: [] })).toBe(data.messages);
  });

  it("gives a read_committed consumer exactly the committed records of any log of interleaved transactions, from any fetch offset to any batch (Kafka's Java consumer)", () => {
    const step = fc.oneof(
      fc.record({
        kind: fc.constant('write' as const),
        producer: fc.constantFrom('1', '2', '3', '-1', '9'),
        keys: fc.array(fc.constantFrom<Buffer | string | null>('k', null, Buffer.from([0, 0, 0, 0]), Buffer.from([0, 0, 0, 1])), {
          minLength: 1,
          maxLength: 3,
        }),
      }),
      fc.record({ kind: fc.constant('end' as const), producer: fc.constantFrom('1', '2', '3'), abort: fc.boolean() }),
    );
    let kafkajsWrong = 0;
    fc.assert(
      fc.property(
        fc.array(step, { maxLength: 30 }),
        fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
        fc.nat(),
        fc.nat(),
        (steps, lastOutcomes, from, to) => {
          const log = new Log();
          for (const s of steps) {
            if (s.kind === 'write') log.write(s.producer, s.keys, s.producer !== '-1' && s.producer !== '9');
            else if (log.openProducers().includes(s.producer)) log.end(s.producer, s.abort ? 'abort' : 'commit');
          }
          // Read_committed reads up to the last stable offset: every transaction of the read has ended.
          for (const [i, p] of log.openProducers().entries()) log.end(p, lastOutcomes[i] === true ? 'abort' : 'commit');
          const starts = log.batchStarts;
          if (starts.length === 0) return;
          const end = BigInt(log.messages.length);
          const fetchOffset = BigInt(from) % (end + 1n);
          const after = starts.filter((s) => s > fetchOffset);
          const upTo = after.length === 0 ? end : (after[to % (after.length + 1)] ?? end);
          const fetch = log.fetch(fetchOffset, upTo);
          expect(seen(fixedBatch, fetch)).toEqual(committed(log, fetch));
          if (seen(kafkajsBatch, fetch).join() !== committed(log, fetch).join()) kafkajsWrong++;
        },
      ),
      { numRuns: 2000 },
    );
    // The generated logs do catch kafkajs's own filter out.
    expect(kafkajsWrong).toBeGreaterThan(0);
  });
});
