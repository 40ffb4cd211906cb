import { TributaryError, toTributaryError } from '../../api/errors.js';
import { isRetriableError } from '../../api/retriable-error.js';
import type { HeartbeatRecord, SourceRecord } from '../../api/source-record.js';
import type { TransformRecord } from '../../api/transformation.js';
import type { JsonObject, OutgoingRecord, RecordMetadata, RecordSender } from '../ports.js';
import type { SubmittedRecord } from '../submitted-records.js';
import type { TaskSettings } from '../task-settings.js';
import type { TransformChain } from '../transform-chain.js';
import type { CommitterHost, OffsetCommitter } from './offset-committer.js';
import { checkTimestampAndHeaders, invalidRecord, safeJson, TopicCheck } from './record-checks.js';
import { headerMap, toTransformRecord } from './transform-records.js';

/** What the dispatcher uses of the runner that owns it. */
export interface DispatchHost<P, O> extends CommitterHost<P, O> {
  readonly sender: RecordSender;
  readonly transforms: TransformChain;
  readonly committer: OffsetCommitter<P, O>;
  /** Set once the task's stop() was called: it gets no more commitRecord() calls. */
  taskStopped(): boolean;
  /** Notes a retry (unless `e` is undefined) and waits its back-off; a stop ends the wait. */
  retryDelay(what: string, e: unknown, attempt: number, atMost?: number): Promise<void>;
  /** A record was acknowledged (true) or failed (false): the poll loop or a stop waiting for the records in flight may go on. */
  settled(acked: boolean): void;
}

type AnyRecord<P, O> = SourceRecord<P, O> | HeartbeatRecord<P, O>;

/**
 * The stages of the task pipeline after the merge of poll rounds and heartbeats, for one record
 * at a time: record checks, the connector's transforms (with `errors.tolerance` and the retry
 * backlog: behind a record whose transform is retried after a RetriableError, every later
 * record waits its turn, heartbeats included), conversion, routing (heartbeat records to the
 * heartbeat topic, never through transforms), submission to the sender, and the acknowledgement
 * that comes back. Per record only route, convert and send; each distinct topic is checked once.
 */
export class RecordDispatcher<P, O> {
  /** Topics already found valid, and the last one (most records go where their predecessor went). */
  private readonly topics = new TopicCheck();
  /** Records (and heartbeats) held behind a record whose transform is being retried, in order. */
  backlog: Array<{ record: AnyRecord<P, O>; heartbeat: boolean }> | undefined;
  /** Settles when the transform retry and the backlog behind it are done. */
  backlogDone: Promise<void> | undefined;
  /** The record whose transform is being retried: neither sent nor in `submitted` yet. */
  retried: SourceRecord<P, O> | undefined;
  /** Records skipped by `errors.tolerance=all` so far. */
  skipped = 0;

  constructor(
    private readonly host: DispatchHost<P, O>,
    /**
     * True when something needs the whole record at its acknowledgement (a listener's `recordAcked`,
     * or a task's own `commitRecord`): it is then kept while in flight; else only its topic is.
     */
    private readonly keepsRecords: boolean,
  ) {}

  private get settings(): TaskSettings {
    return this.host.settings();
  }

  /** A record from poll() or produceHeartbeatRecords() through the stages, to the sender. */
  dispatch(record: SourceRecord<P, O> | HeartbeatRecord<P, O>, heartbeat: boolean): void {
    if (this.host.state() === 'FAILED') {
      // Dropped unsent: no KIP-910 update (of the final flush) may commit past it.
      this.host.rules.noteUnsent(record);
      return;
    }
    if (this.host.rules.dispatchedDuringUpdate) this.host.rules.notePartition(record, this.host.rules.dispatchedDuringUpdate);
    // Behind a record whose transform is being retried, everything waits its turn, heartbeats
    // included: none may commit an offset past a record not yet sent.
    if (this.backlog) {
      this.backlog.push({ record, heartbeat });
      return;
    }
    try {
      checkTimestampAndHeaders(this.host.id, record, record.timestamp, record.headers, '');
      // Heartbeat records never go through transforms: nothing may route one into a data topic.
      if (!heartbeat && this.host.transforms.size > 0) {
        this.dispatchTransformed(record as SourceRecord<P, O>);
        return;
      }
      const topic = heartbeat ? this.settings.heartbeatTopic : record.topic;
      if (typeof topic !== 'string' || topic.length === 0)
        throw invalidRecord(
          this.host.id,
          record,
          'has no topic',
          'every record from poll() needs one; heartbeat records come from produceHeartbeatRecords()',
        );
      if (topic !== this.topics.last) this.topics.check(topic, this.host.id, record);
      const partition = record.kafkaPartition;
      if (partition !== undefined && !(Number.isInteger(partition) && partition >= 0)) {
        throw invalidRecord(
          this.host.id,
          record,
          `has kafkaPartition ${String(partition)}`,
          'it must be an integer >= 0 or absent',
        );
      }
      let key: Buffer | null;
      let value: Buffer | null;
      try {
        key = this.settings.keyConverter(record.key, topic);
        value = this.settings.valueConverter(record.value, topic);
      } catch (e) {
        if (!heartbeat && this.tolerated(e, record, 'conversion', { topic, partition, key: record.key, value: record.value }))
          return;
        throw e;
      }
      const out: OutgoingRecord = {
        topic,
        partition,
        key,
        value,
        headers: record.headers ?? undefined,
        timestamp: record.timestamp ?? undefined,
        heartbeat,
        source: record,
      };
      this.submit(record, out);
    } catch (e) {
      this.host.rules.noteUnsent(record);
      const error = toTributaryError(e, 'RECORD_INVALID', `Task ${this.host.id} produced a record it cannot send`);
      this.host.listener.recordFailed?.(error);
      this.host.fail(error);
    }
  }

  /**
   * A data record through the connector's transforms, then converted and sent. A record a
   * transform drops is not sent, but its offset commits (behind the records before it), as in
   * Kafka Connect.
   */
  private dispatchTransformed(record: SourceRecord<P, O>): void {
    const input = toTransformRecord(record);
    let transformed: TransformRecord | null;
    try {
      transformed = this.host.transforms.apply(input);
    } catch (e) {
      if (isRetriableError(e) && this.settings.retryTimeoutMs !== 0) {
        this.retried = record;
        this.backlog = [];
        this.backlogDone = this.retryTransform(record, input, e).finally(() => {
          this.backlogDone = undefined;
        });
        return;
      }
      this.transformFailed(record, input, e);
      return;
    }
    this.sendTransformed(record, input, transformed);
  }

  /** A transform failed on a record for good: skipped under `errors.tolerance=all`, else the task fails. */
  private transformFailed(record: SourceRecord<P, O>, input: TransformRecord, e: unknown): void {
    const error = isRetriableError(e)
      ? new TributaryError(
          'TRANSFORM_FAILED',
          `A transform of task ${this.host.id} kept failing with a RetriableError on a record for topic '${record.topic}' until errors.retry.timeout (${this.settings.retryTimeoutMs} ms) ran out: ${e.message}`,
          { cause: e },
        )
      : toTributaryError(
          e,
          'TRANSFORM_FAILED',
          `A transform of task ${this.host.id} failed on a record for topic '${record.topic}'`,
        );
    if (this.tolerated(error, record, 'transformation', input)) return;
    throw error;
  }

  /**
   * Applies the transforms to a record again after back-offs while they throw RetriableError,
   * up to `errors.retry.timeout`; then sends it (or handles the failure), and dispatches what
   * queued up behind it, in order.
   */
  private async retryTransform(record: SourceRecord<P, O>, input: TransformRecord, first: unknown): Promise<void> {
    const started = this.host.clock.now();
    const timeout = this.settings.retryTimeoutMs;
    let error: unknown = first;
    try {
      for (let attempt = 1; ; attempt++) {
        const left = timeout < 0 ? Number.POSITIVE_INFINITY : started + timeout - this.host.clock.now();
        if (left <= 0) {
          this.transformFailed(record, input, error);
          break;
        }
        await this.host.retryDelay('transform', error, attempt, left);
        // Left as they are (`retried`, `backlog`): nothing behind the record is sent, and no
        // offset update commits past it or them.
        if (this.host.stopping() || this.host.state() === 'FAILED') return;
        try {
          this.sendTransformed(record, input, this.host.transforms.apply(input));
          break;
        } catch (e) {
          if (!isRetriableError(e)) {
            this.transformFailed(record, input, e);
            break;
          }
          error = e;
        }
      }
    } catch (e) {
      // The record and those behind it are never sent.
      this.host.rules.noteUnsent(record);
      for (const held of this.backlog ?? []) this.host.rules.noteUnsent(held.record);
      this.retried = undefined;
      this.backlog = undefined;
      this.host.fail(toTributaryError(e, 'RECORD_INVALID', `Task ${this.host.id} produced a record it cannot send`));
      return;
    }
    // Submitted (or skipped, which submits its offset as acknowledged): `submitted` has it now.
    this.retried = undefined;
    const waiting = this.backlog ?? [];
    this.backlog = undefined;
    for (let i = 0; i < waiting.length; i++) {
      const next = waiting[i] as (typeof waiting)[number];
      this.dispatch(next.record, next.heartbeat);
      // A new retry started: the rest waits behind it again.
      if (this.backlog) {
        (this.backlog as typeof waiting).push(...waiting.slice(i + 1));
        await this.backlogDone;
        return;
      }
    }
  }

  /** Sends a transformed record (null: dropped, its offset commits). */
  private sendTransformed(record: SourceRecord<P, O>, input: TransformRecord, transformed: TransformRecord | null): void {
    if (transformed === null) {
      this.submitSkipped(record);
      return;
    }
    const topic = transformed.topic;
    if (typeof topic !== 'string' || topic.length === 0)
      throw invalidRecord(this.host.id, record, 'has no topic after its transforms', 'a transform must leave a non-empty topic');
    if (topic !== this.topics.last) this.topics.check(topic, this.host.id, record);
    const partition = transformed.kafkaPartition;
    if (partition !== undefined && partition !== null && !(Number.isInteger(partition) && partition >= 0)) {
      throw invalidRecord(
        this.host.id,
        record,
        `has kafkaPartition ${String(partition)} after its transforms`,
        'it must be an integer >= 0 or absent',
      );
    }
    checkTimestampAndHeaders(this.host.id, record, transformed.timestamp ?? undefined, undefined, ' after its transforms');
    let key: Buffer | null;
    let value: Buffer | null;
    try {
      key = this.settings.keyConverter(transformed.key, topic);
      value = this.settings.valueConverter(transformed.value, topic);
    } catch (e) {
      if (this.tolerated(e, record, 'conversion', transformed)) return;
      throw e;
    }
    const out: OutgoingRecord = {
      topic,
      partition: partition ?? undefined,
      key,
      value,
      // Headers no transform touched go out as the task gave them.
      headers: transformed.headers === input.headers ? record.headers : headerMap(transformed.headers),
      timestamp: transformed.timestamp ?? undefined,
      heartbeat: false,
      source: record,
      transformed,
    };
    this.submit(record, out);
  }

  /** Counts as acknowledged a record that is not sent (dropped or skipped): its offset commits behind the records before it. */
  private submitSkipped(record: SourceRecord<P, O> | HeartbeatRecord<P, O>): void {
    const part = this.host.rules.encodePartition(record.sourcePartition);
    const offset = this.host.rules.encodeOffset(record.sourceOffset);
    this.host.submitted.submitAcked(part.key, part.encoded, offset);
    // With exactly-once the offset of a record not sent commits in the transaction too.
    this.host.committer.handedOver?.(record, part, offset);
  }

  /**
   * `errors.tolerance=all`: skips a record a transform or converter failed on (its offset
   * commits), counts it and logs it when `errors.log.enable` is set. False under `none`.
   */
  private tolerated(
    error: unknown,
    record: SourceRecord<P, O> | HeartbeatRecord<P, O>,
    stage: 'transformation' | 'conversion',
    shown: {
      topic?: string;
      partition?: number | undefined;
      kafkaPartition?: number | undefined;
      key?: unknown;
      value?: unknown;
      timestamp?: number | undefined;
    },
  ): boolean {
    if (!this.settings.toleranceAll) return false;
    this.skipped++;
    if (this.settings.errorsLog) {
      const message = error instanceof Error ? error.message : safeJson(error);
      this.host.log.warn(
        {
          event: 'record.skipped',
          stage,
          skipped: this.skipped,
          err: error,
          ...(this.settings.errorsLogMessages
            ? {
                record: {
                  topic: shown.topic,
                  partition: shown.partition ?? shown.kafkaPartition,
                  key: shown.key,
                  value: shown.value,
                  timestamp: shown.timestamp,
                },
              }
            : {}),
        },
        `errors.tolerance=all: skipped a record that failed in ${stage} (source partition ${safeJson(record.sourcePartition)}, offset ${safeJson(record.sourceOffset)}): ${message}`,
      );
    }
    this.submitSkipped(record);
    return true;
  }

  private submit(record: SourceRecord<P, O> | HeartbeatRecord<P, O>, out: OutgoingRecord): void {
    const part = this.host.rules.encodePartition(record.sourcePartition);
    const size = (out.key?.length ?? 0) + (out.value?.length ?? 0);
    const offset = this.host.rules.encodeOffset(record.sourceOffset);
    // Kept until the acknowledgement: the record itself only when something needs it then (a
    // heartbeat always, they are few); else its topic, so the record, its source record and their
    // values are garbage once the sender has them.
    const handle = this.host.submitted.submit<OutgoingRecord | string>(
      part.key,
      part.encoded,
      offset,
      size,
      this.keepsRecords || out.heartbeat ? out : out.topic,
    );
    try {
      this.host.sender.send(out, (error, metadata) => this.onSent(handle, error, metadata));
    } catch (e) {
      // send() must not throw (RecordSender); one that does gets no callback for this record.
      this.onSent(handle, e instanceof Error ? e : new Error(safeJson(e)), undefined);
    }
    this.host.committer.handedOver?.(record, part, offset);
  }

  private onSent(
    handle: SubmittedRecord<JsonObject, OutgoingRecord | string>,
    error: Error | undefined,
    metadata: RecordMetadata | undefined,
  ): void {
    // A sender calling back again for a record it settled: a second acknowledgement changes
    // nothing (after a failure it must not let the partition commit past the failed record); an
    // error still fails the task, as the first would have.
    if (handle.settled && error === undefined && metadata !== undefined) return;
    const ref = handle.ref;
    const out = typeof ref === 'string' ? undefined : ref;
    const topic = typeof ref === 'string' ? ref : ref.topic;
    if (this.host.committer.discarding) {
      // Its transaction was aborted on purpose (TransactionContext): the record is dropped, and
      // the partition's later records commit past it, as in Kafka Connect.
      this.host.submitted.ack(handle);
      return;
    }
    if (error || !metadata) {
      // Nothing more will come for it, but its partition must not commit past it.
      this.host.submitted.fail(handle);
      const failure = toTributaryError(error ?? new Error('no metadata'), 'SEND_FAILED', `Sending to topic '${topic}' failed`);
      this.host.listener.recordFailed?.(failure);
      this.host.fail(failure);
      this.host.settled(false);
      return;
    }
    this.host.submitted.ack(handle);
    if (out !== undefined) {
      // A task already stopped gets no more calls (its resources may be gone).
      if (this.keepsRecords && !this.host.taskStopped()) {
        try {
          this.host.task.commitRecord(out.source as SourceRecord<P, O>, metadata);
        } catch (e) {
          this.host.log.warn({ event: 'task.commitRecord.failed', err: e }, 'commitRecord() threw; ignored');
        }
      }
      this.host.listener.recordAcked?.(out, metadata);
    }
    this.host.listener.recordAckedTo?.(topic, out?.heartbeat === true);
    this.host.settled(true);
  }
}
