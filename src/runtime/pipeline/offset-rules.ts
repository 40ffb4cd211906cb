import { canonicalJson } from '../../api/canonical-json.js';
import type { Clock } from '../../api/clock.js';
import { OffsetDecodeError, TributaryError } from '../../api/errors.js';
import type { Logger } from '../../api/logger.js';
import { notStoredAsGiven } from '../../api/offset-codec.js';
import type { HeartbeatRecord, OffsetUpdate, SourceRecord } from '../../api/source-record.js';
import type { SourceTask } from '../../api/source-task.js';
import { withTimeout } from '../clock-timers.js';
import type { JsonObject } from '../ports.js';
import type { Committable } from '../submitted-records.js';
import { safeJson, sameFlatObject } from './record-checks.js';

/** A source partition in its stored form, and its canonical key. */
export interface EncodedPartition {
  readonly key: string;
  readonly encoded: JsonObject;
}

/** The records dispatched and not submitted yet: the one whose transform is retried, and those waiting behind it. */
export type Held<P, O> = () => {
  readonly retried: SourceRecord<P, O> | undefined;
  readonly backlog: ReadonlyArray<{ readonly record: SourceRecord<P, O> | HeartbeatRecord<P, O> }> | undefined;
};

/**
 * A task's source partitions and offsets on their way to the store: their encoding (cached per
 * partition object), the check that what is stored reads back as given, and the KIP-910 offset
 * updates with the "not submitted" rules that keep an update from moving an offset behind records
 * already submitted or past one not yet sent. Used by both offset committers.
 */
export class OffsetRules<P, O> {
  private readonly partitions = new WeakMap<object, EncodedPartition>();
  /** The last partition encoded (object and result): most records repeat their predecessor's partition. */
  private lastPartition: object | undefined;
  private lastEncoded: EncodedPartition | undefined;
  /** Keys of source partitions the task's codec read back at an earlier flush (see dropUnreadable). */
  private readonly readablePartitions = new Set<string>();
  /**
   * Keys of partitions with a record that this run will never send (it failed before it was
   * submitted, or came after the task failed): as for a failed send, no KIP-910 update may
   * commit past it. Only failures add to it, and each fails the task, so it stays small.
   */
  private readonly unsent = new Set<string>();
  /** While updateOffsets() runs: keys of the partitions that got a record meanwhile, wherever it went. */
  dispatchedDuringUpdate: Set<string> | undefined;

  constructor(
    private readonly task: SourceTask<P, O, unknown>,
    private readonly connector: string,
    private readonly id: string,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** `offset.flush.timeout.ms`: how long updateOffsets() may take. */
    private readonly timeoutMs: () => number,
  ) {}

  /** The stored form of a partition and its canonical key, cached per partition object. */
  encodePartition(partition: P): EncodedPartition {
    const cacheable = typeof partition === 'object' && partition !== null;
    if (cacheable) {
      const last = this.lastPartition;
      if (partition === last) return this.lastEncoded as EncodedPartition;
      // A fresh object equal to the last one (flat, primitive values): same encoding, no WeakMap entry.
      if (last !== undefined && sameFlatObject(last, partition)) {
        this.lastPartition = partition;
        return this.lastEncoded as EncodedPartition;
      }
    }
    let found = cacheable ? this.partitions.get(partition) : undefined;
    if (found === undefined) {
      const encoded = this.task.offsets.encodePartition(partition);
      found = { key: canonicalJson(encoded), encoded };
      if (cacheable) this.partitions.set(partition, found);
    }
    if (cacheable) {
      this.lastPartition = partition;
      this.lastEncoded = found;
    }
    return found;
  }

  /**
   * The stored form of an offset, taken now: a task that later changes the object it passed
   * cannot move a committed offset, and an offset that cannot be encoded fails its record.
   */
  encodeOffset(offset: O): JsonObject {
    return this.task.offsets.encodeOffset(offset);
  }

  /**
   * Takes out of `entries` every source partition or offset about to be stored that would not
   * come back as given: one the task's own codec does not read back (`offset.id: expected
   * number, got "42"`, from a record whose offset was built with the wrong type), or, from a
   * codec not built with offsetCodec, one JSON does not store as it is (NaN). Their partitions
   * keep the offsets stored before. Returns the error that fails the task, naming the first;
   * undefined when all are fine. Once per partition per flush, not per record.
   */
  dropUnreadable(entries: Map<string, Committable<JsonObject, JsonObject | null>>): TributaryError | undefined {
    const codec = this.task.offsets;
    let first: TributaryError | undefined;
    let count = 0;
    for (const [key, e] of entries) {
      // The key is canonical JSON, which is lossy (NaN and null give the same): the JSON check
      // runs every time, and only the codec's decode is skipped for a partition read back before.
      const known = this.readablePartitions.has(key);
      const notJson = notStoredAsGiven(e.partition, 'partition') ?? notStoredAsGiven(e.offset, 'offset');
      const p = known || notJson !== undefined ? ({ ok: true } as const) : codec.decodePartition(e.partition);
      const o = e.offset === null || notJson !== undefined ? undefined : codec.decodeOffset(e.offset);
      const problems = [
        ...(notJson === undefined ? [] : [notJson]),
        ...(p.ok ? [] : p.problems),
        ...(o === undefined || o.ok ? [] : o.problems),
      ];
      if (problems.length === 0) {
        // Bounded as `committed` is: a source with a partition per entity decodes some again.
        if (!known) {
          if (this.readablePartitions.size >= 10_000) this.readablePartitions.clear();
          this.readablePartitions.add(key);
        }
        continue;
      }
      entries.delete(key);
      count++;
      first ??= new TributaryError(
        'RECORD_INVALID',
        `Task ${this.id} produced a source ${p.ok && notJson === undefined ? 'offset' : 'partition or offset'} that would not be read back as given, so it is not stored (the next start could not read it): ${problems.join('; ')} (source partition ${safeJson(e.partition)}, offset ${safeJson(e.offset)}). Give records the types the task's offsets codec declares, or declare the types the records carry`,
      );
    }
    if (first === undefined || count === 1) return first;
    return new TributaryError('RECORD_INVALID', `${first.message}; and ${count - 1} more source partition(s) like it`);
  }

  /** Offsets as the task's types, for its hooks; an offset its own codec cannot read back is a codec bug. */
  decodeAll(entries: Iterable<Committable<JsonObject, JsonObject>>): Array<OffsetUpdate<P, O>> {
    const codec = this.task.offsets;
    return [...entries].map((e) => {
      const p = codec.decodePartition(e.partition);
      const o = codec.decodeOffset(e.offset);
      if (!p.ok || !o.ok) {
        throw new OffsetDecodeError(this.connector, e.partition, [...(p.ok ? [] : p.problems), ...(o.ok ? [] : o.problems)]);
      }
      return { partition: p.value, offset: o.value };
    });
  }

  /**
   * KIP-910: asks the task for fresher offsets than the acknowledged ones it is shown. The task
   * never sees records still in flight, so its update could be older than what they will
   * commit, or past records not yet in Kafka: an update is taken only for a partition with no
   * record submitted and not yet committable, none under a transform retry or waiting behind
   * one, none dropped unsent (see {@link partitionsNotSubmitted}), none dispatched while the
   * hook ran, and whose pending offset did not change while the hook ran. Any other update is dropped
   * (the task is asked again at the next flush, when it sees those records' offset), so an
   * update never moves an offset behind records already submitted, nor past one not yet sent.
   */
  async applyUpdates(
    pending: () => Map<string, Committable<JsonObject, JsonObject>>,
    inFlight: (key: string) => boolean,
    heldNow: Held<P, O>,
  ): Promise<void> {
    const shown = new Map(pending());
    let fresher: ReadonlyArray<OffsetUpdate<P, O>> | undefined;
    const dispatched = new Set<string>();
    this.dispatchedDuringUpdate = dispatched;
    try {
      const current = this.decodeAll(pending().values());
      const outcome = await withTimeout(this.clock, Promise.resolve(this.task.updateOffsets?.(current)), this.timeoutMs());
      if (!outcome.ok) {
        if (outcome.timedOut) throw new Error(`it did not return within offset.flush.timeout.ms (${this.timeoutMs()} ms)`);
        throw outcome.error;
      }
      fresher = outcome.value ?? undefined;
      if (fresher !== undefined && !Array.isArray(fresher)) {
        throw new TypeError(
          `it returned ${typeof fresher === 'object' ? 'an object' : typeof fresher}, not an array of { partition, offset } (return [] or nothing for no updates)`,
        );
      }
    } catch (e) {
      this.log.warn(
        { event: 'task.updateOffsets.failed', err: e },
        `updateOffsets() failed; flushing without its offsets: ${(e as Error).message}`,
      );
      return;
    } finally {
      this.dispatchedDuringUpdate = undefined;
    }
    if (fresher === undefined || fresher.length === 0) return;
    const held = this.partitionsNotSubmitted(heldNow);
    for (const update of fresher) {
      try {
        const part = this.encodePartition(update.partition);
        // Records in flight (or sent while the hook ran, acknowledged or not) will commit
        // offsets the task did not see: its update could be older than theirs. Records not yet
        // sent (under a transform retry, behind one, or dropped unsent) are not in Kafka: an
        // offset past them would lose them at a restart.
        if (
          inFlight(part.key) ||
          held.has(part.key) ||
          dispatched.has(part.key) ||
          pending().get(part.key) !== shown.get(part.key)
        ) {
          this.log.debug(
            { event: 'task.updateOffsets.deferred', partition: part.encoded },
            'updateOffsets() returned an offset for a partition with records in flight or not yet sent; asked again at the next flush',
          );
          continue;
        }
        pending().set(part.key, { partition: part.encoded, offset: this.encodeOffset(update.offset) });
      } catch (e) {
        this.log.warn(
          { event: 'task.updateOffsets.invalid', err: e },
          'updateOffsets() returned an offset that cannot be encoded; ignored',
        );
      }
    }
  }

  /**
   * Keys of the partitions with a record dispatched that is not in `submitted`: the one whose
   * transform is being retried, those queued behind it, and those this run will never send.
   * Walks the backlog (at most a poll round and what came with it): once per offset update.
   */
  private partitionsNotSubmitted(held: Held<P, O>): Set<string> {
    const keys = new Set(this.unsent);
    const { retried, backlog } = held();
    if (retried !== undefined) this.notePartition(retried, keys);
    for (const waiting of backlog ?? []) this.notePartition(waiting.record, keys);
    return keys;
  }

  /** A record dispatched that will never be sent in this run: its partition takes no offset update. */
  noteUnsent(record: SourceRecord<P, O> | HeartbeatRecord<P, O>): void {
    this.notePartition(record, this.unsent);
  }

  /** Adds the key of the record's partition; a partition that cannot be encoded has no key an update could name. */
  notePartition(record: SourceRecord<P, O> | HeartbeatRecord<P, O>, keys: Set<string>): void {
    try {
      keys.add(this.encodePartition(record.sourcePartition).key);
    } catch {
      // The record fails on its own (RECORD_INVALID) when it is submitted.
    }
  }
}
