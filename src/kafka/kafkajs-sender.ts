/**
 * {@link KafkajsSender}: the {@link RecordSender} on a kafkajs producer, a façade over
 * - batch-accumulator.ts: the batch that fills now (`send`'s per-record path);
 * - dispatch-window.ts: queued and in-flight batches, settled in order (pure);
 * - send-retry-policy.ts: re-send or give up, and what the records are told;
 * - producer-lifecycle.ts: the producer, its connection, its replacement after a give-up;
 * - stall-monitor.ts: `onStall` reports;
 * - kafkajs-batch.ts: the batch shape, the split after tulios/kafkajs#1303, the callback loop.
 * This file wires them: a batch goes accumulator → window → `producer.sendBatch` → answer →
 * window (acked / re-sent / failed) → callbacks.
 */
import type { CompressionTypes, KafkaConfig, RecordMetadata as KafkajsRecordMetadata, TopicMessages } from 'kafkajs';
import type { TributaryError } from '../api/errors.js';
import type { OutgoingRecord, RecordSender, SendCallback, SenderStall } from '../runtime/ports.js';
import { BatchAccumulator } from './batch-accumulator.js';
import { DispatchWindow } from './dispatch-window.js';
import { asError, type Batch, callBack, splitOff, topicsOf, wasSent } from './kafkajs-batch.js';
import { attemptsIn, isNotAttempted, isProducerGone, isRetriableSendError } from './kafkajs-errors.js';
import { Kafka } from './kafkajs-fixes.js';
import { indexResponse, unacknowledged } from './produce-response.js';
import { kafkajsClientOptions, type ResolvedProducerConfig } from './producer-config.js';
import { type KafkajsLike, type KafkajsProducerLike, ProducerLifecycle } from './producer-lifecycle.js';
import {
  backoffMs,
  closedError,
  expiredError,
  failedError,
  isExpired,
  mayResend,
  sentAfterCloseError,
} from './send-retry-policy.js';
import { StallMonitor } from './stall-monitor.js';

export type { KafkajsLike, KafkajsProducerLike };

/** What a {@link KafkajsSender} reports besides record callbacks (instrumentation, not logging). */
export type KafkajsSenderEvent =
  | {
      /**
       * A batch failed with a transient error, or kafkajs reported it written without an offset
       * for some partition, and it (or that part) will be sent again after `delayMs`.
       */
      readonly type: 'retry';
      readonly topics: readonly string[];
      readonly records: number;
      /** Requests made for this batch so far (kafkajs's own retries included). */
      readonly requests: number;
      /** Ms since the batch's first record was handed to `send`. */
      readonly elapsedMs: number;
      readonly delayMs: number;
      readonly error: unknown;
    }
  | {
      /**
       * With several batches in flight, kafkajs put a later batch on the wire before this one
       * (its pre-send steps are asynchronous per call), so this batch and the later ones are
       * sent again to keep acknowledged records in order. Idempotence off only.
       */
      readonly type: 'reordered';
      readonly topics: readonly string[];
      readonly records: number;
    }
  | {
      /** A batch failed for good; each of its records got `error`. */
      readonly type: 'failed';
      readonly topics: readonly string[];
      readonly records: number;
      readonly error: TributaryError;
    }
  | {
      /**
       * After the sender gave up on a batch that may have been written (idempotence on), it
       * replaced its producer with a fresh one (a new producer id) before sending anything
       * else: kafkajs had rolled that batch's sequence numbers back, and the old producer's next
       * batch could have been taken by the broker for a duplicate of it.
       */
      readonly type: 'producer-replaced';
      /** Connection attempts the fresh producer needed. */
      readonly attempts: number;
    };

/** Options of {@link KafkajsSender}. */
export interface KafkajsSenderOptions {
  /** The kafkajs client to make the producer from; give it {@link kafkajsClientOptions} of `config`. */
  readonly kafka: KafkajsLike;
  /** Producer settings from {@link resolveProducerConfig}. */
  readonly config: ResolvedProducerConfig;
  /** Receives errors that belong to no record: a throwing record callback, a failed disconnect. Default: ignored. */
  readonly onAsyncError?: ((error: Error) => void) | undefined;
  /** Receives retry and failure events, e.g. for metrics. Default: ignored. */
  readonly onEvent?: ((event: KafkajsSenderEvent) => void) | undefined;
}

/**
 * {@link RecordSender} on a kafkajs producer, with the batching kafkajs lacks.
 *
 * Records handed to {@link send} are gathered into a batch that is sent with one
 * `producer.sendBatch` (one Produce request per leader broker, covering all its partitions in
 * the batch) when it holds
 * `batch.size` bytes or `batch.max.records` records, when it has waited `linger.ms`, or on
 * {@link flush}. At most `max.in.flight.requests.per.connection` batches are outstanding; while
 * all slots are taken the current batch keeps filling.
 *
 * Guarantees:
 * - every record's callback runs exactly once: with its metadata after its batch is
 *   acknowledged (offset = the partition's base offset + the record's index within that
 *   partition in the batch; -1 with `acks=0`; timestamp = the record's own, or the broker's
 *   log-append time, else absent: a record sent without a timestamp is stamped by kafkajs when
 *   it encodes the request, at a time the sender does not learn), or with a
 *   `TributaryError('SEND_FAILED')`;
 * - per partition, records reach Kafka and are acknowledged in `send` order. A batch that fails
 *   with a transient error is re-sent before any later batch (after the batches still in flight
 *   have settled, and together with them) until `delivery.timeout.ms` from its first record or
 *   `retries` is used up. With idempotence on (the default, one in flight), re-sends are
 *   de-duplicated by the broker. With more than one batch in flight (idempotence off), kafkajs
 *   may also write a later batch before an earlier one; the sender sees it in the base offsets
 *   and re-sends from the overtaken batch, so such re-sends write some batches twice but the
 *   acknowledged copies are always in `send` order;
 * - a `sendBatch` that resolves without an offset for some partition of the batch (kafkajs
 *   skips partitions whose leader moved to a broker that had already answered: tulios/kafkajs#1303)
 *   does not acknowledge those records: they are re-sent like a failed batch;
 * - errors that are not transient (record too large, not authorised, invalid topic) fail the
 *   batch at once;
 * - no kafkajs promise is left without a handler. kafkajs can still reject promises of its own
 *   that no one holds (tulios/kafkajs#1686); see {@link installKafkajsRejectionGuard};
 * - with idempotence on, after the sender gives up on a batch it has sent (its outcome is then
 *   unknown: the broker may have written it), no later record goes out on that producer.
 *   kafkajs rolls a failed request's sequence numbers back, so the producer's next batch to the
 *   partition would reuse them and, with the same record count, be answered by the broker as a
 *   duplicate of the given-up one, with that one's offsets, without being written. Later batches
 *   wait until a fresh producer (new producer id) is connected, then go out on it;
 * - `delivery.timeout.ms` unset (the default): transient failures are retried in order until
 *   Kafka answers, however long it is away; memory stays bounded because the caller's in-flight
 *   bound stops it sending more. {@link onStall} listeners hear when Kafka stops answering
 *   (within about `request.timeout.ms`, sooner on a connection error), every few seconds while
 *   it lasts, and when it answers again.
 *
 * Known limits: kafkajs retries a call `KAFKAJS_RETRIES_PER_CALL` times (producer-lifecycle.ts)
 * before the sender takes over, so kafkajs logs once per producer that limiting retries "may
 * invalidate EoS guarantees"; with one batch in flight that does not hold here, since kafkajs rolls its
 * sequence numbers back after a failed request and the sender re-sends the same batch. With
 * several brokers, a batch that kafkajs gives up on after one broker took its part is re-sent
 * whole, so that part is written twice even with idempotence (kafkajs does not say which part
 * was written). `delivery.timeout.ms` is checked between requests: one that hangs (bounded by
 * the client's `requestTimeout`) is not cut short.
 *
 * The send path allocates one message object per record and a handful of arrays per batch; no
 * promise, closure or `try` per record.
 *
 * @example
 * ```ts
 * import { Kafka } from 'kafkajs';
 * import { kafkajsClientOptions, resolveProducerConfig } from './producer-config.js';
 *
 * const config = resolveProducerConfig({ 'producer.linger.ms': '5' }, { name: 'orders' }, { task: 0 });
 * const kafka = new Kafka({ brokers: ['127.0.0.1:9092'], ...kafkajsClientOptions(config) });
 * const sender = new KafkajsSender({ kafka, config });
 * await sender.connect();
 * sender.send({ topic: 'orders', key: null, value: Buffer.from('{}') }, (err, md) => {
 *   if (err) console.error(err);
 *   else console.log(md?.offset);
 * });
 * await sender.flush();
 * await sender.close();
 * ```
 */
export class KafkajsSender implements RecordSender {
  private readonly config: ResolvedProducerConfig;
  private readonly compression: CompressionTypes;
  private readonly onAsyncError: (error: Error) => void;
  private readonly onEvent: ((event: KafkajsSenderEvent) => void) | undefined;
  private readonly producers: ProducerLifecycle;
  private readonly accumulator: BatchAccumulator;
  private readonly window: DispatchWindow<Batch>;
  private readonly monitor: StallMonitor;

  private closing: Promise<void> | undefined;
  /** The back-off before a re-send: nothing is dispatched while it runs. */
  private backoffTimer: NodeJS.Timeout | undefined;
  private accepted = 0;
  private completed = 0;
  private flushWaiters: { target: number; resolve: () => void }[] = [];

  /**
   * Makes the producer (not yet connected; see {@link connect}).
   *
   * @param options The kafkajs client, the resolved settings and optional observers.
   */
  constructor(options: KafkajsSenderOptions) {
    const config = options.config;
    this.config = config;
    this.compression = (config.compression === 'gzip' ? 1 : 0) as CompressionTypes;
    this.onAsyncError = options.onAsyncError ?? (() => {});
    this.onEvent = options.onEvent;
    this.producers = new ProducerLifecycle(options.kafka, config, this.onAsyncError);
    this.accumulator = new BatchAccumulator(config, this.pump);
    this.window = new DispatchWindow<Batch>({
      checkOvertaking: config.maxInFlight > 1,
      onSettled: (batch) => this.complete(batch, batch.state === 'failed' ? batch.error : undefined),
      onReordered: (batch) => this.onEvent?.({ type: 'reordered', topics: topicsOf(batch), records: batch.count }),
    });
    this.monitor = new StallMonitor(
      config.requestTimeoutMs,
      {
        pending: () => this.pending,
        oldestDispatchedAt: () => this.window.head?.dispatchedAt,
      },
      this.onAsyncError,
    );
  }

  /** Records handed to `send` whose callback has not run yet. */
  get pending(): number {
    return this.accepted - this.completed;
  }

  /**
   * Registers a listener for stalls: called with a {@link SenderStall} when Kafka stops
   * acknowledging the records that wait (a sender-level re-send, or a request unanswered for
   * `request.timeout.ms`), again every few seconds while that lasts, and with `undefined` once a
   * batch is acknowledged again or no record waits any more. A throwing listener goes to
   * `onAsyncError`.
   */
  onStall(listener: (stall: SenderStall | undefined) => void): void {
    this.monitor.listen(listener);
  }

  /**
   * Connects the producer (and, when idempotent, obtains its producer id). Records sent before
   * are held and go out once connected.
   *
   * @throws Whatever kafkajs's `connect()` rejects with; the sender may be connected again.
   */
  async connect(): Promise<void> {
    if (await this.producers.connect()) this.pump();
  }

  /**
   * Queues a record; `onDone` runs once, later, with its metadata or a `SEND_FAILED` error.
   * Never throws. After {@link close} the record fails at once (asynchronously).
   */
  send(record: OutgoingRecord, onDone: SendCallback): void {
    if (this.producers.state === 'closed') {
      const error = sentAfterCloseError(record.topic);
      queueMicrotask(() => onDone(error, undefined));
      return;
    }
    this.accepted++;
    const full = this.accumulator.add(record, onDone);
    if (full !== undefined) {
      this.window.enqueue(full);
      this.pump();
    }
  }

  /**
   * Sends the lingering batch now and resolves when every record handed to {@link send} before
   * this call has had its callback (successfully or not). Never rejects: failures go to the
   * records' callbacks.
   */
  flush(): Promise<void> {
    if (this.completed >= this.accepted) return Promise.resolve();
    if (this.accumulator.markDue()) this.pump();
    return new Promise((resolve) => this.flushWaiters.push({ target: this.accepted, resolve }));
  }

  /**
   * Disconnects the producer. Does not wait for outstanding records: call {@link flush} first.
   * Records still held or in flight get a `SEND_FAILED` error now ("may or may not have been
   * written"), since kafkajs's `disconnect()` does not wait for requests it is still retrying
   * (tulios/kafkajs#879); results kafkajs delivers later are ignored. Never rejects; a failed
   * disconnect goes to `onAsyncError`.
   */
  close(): Promise<void> {
    if (this.closing === undefined) this.closing = this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    const started = this.producers.markClosed();
    const open = this.accumulator.take();
    if (this.backoffTimer !== undefined) {
      clearTimeout(this.backoffTimer);
      this.backoffTimer = undefined;
    }
    this.monitor.stop();
    const pending = this.window.drain();
    if (open !== undefined) pending.push(open);
    for (const batch of pending) {
      if (batch.state === 'acked') this.complete(batch, undefined);
      else if (batch.state === 'failed') this.complete(batch, batch.error);
      else this.complete(batch, closedError(batch));
    }
    if (started) await this.producers.disconnect();
  }

  /** Dispatches as many batches as slots allow, oldest first. */
  private readonly pump = (): void => {
    if (!this.producers.connected || this.backoffTimer !== undefined) return;
    if (this.window.holding()) return;
    const replacing = this.producers.replacing;
    if (replacing !== 'none') {
      if (replacing === 'wanted' && this.window.unanswered === 0) void this.replaceProducer();
      return;
    }
    const slots = this.config.maxInFlight === 1 ? (this.producers.producer.queueDepth ?? 1) : this.config.maxInFlight;
    while (this.window.hasSlot(slots)) {
      const batch = this.window.takeReady() ?? this.accumulator.takeDue();
      if (batch === undefined) return;
      const now = Date.now();
      if (isExpired(this.config, batch, now)) {
        // A batch sent before (waiting for its re-send) may have been written, and kafkajs
        // rolled its sequence numbers back: as after any give-up, nothing more on this producer.
        const sentBefore = wasSent(batch) && this.config.idempotent;
        if (sentBefore) this.producers.want();
        this.complete(batch, expiredError(this.config, batch, now));
        if (sentBefore) {
          this.pump();
          return;
        }
        continue;
      }
      this.dispatch(batch);
    }
  };

  private dispatch(batch: Batch): void {
    const attempt = this.window.dispatch(batch);
    batch.dispatchedAt = Date.now();
    this.monitor.watch();
    let sending: Promise<KafkajsRecordMetadata[]>;
    try {
      sending = this.producers.producer.sendBatch({
        topicMessages: batch.entries as unknown as TopicMessages[],
        acks: this.config.acks,
        timeout: this.config.requestTimeoutMs,
        compression: this.compression,
      });
    } catch (e) {
      // kafkajs's sendBatch is async and cannot throw, but a KafkaJS-compatible client might;
      // send() must not.
      sending = Promise.reject(e);
    }
    sending
      .then(
        (response) => this.onSent(batch, attempt, response),
        (error: unknown) => this.onFailed(batch, attempt, error),
      )
      .catch((e: unknown) => this.onAsyncError(asError(e)));
  }

  private onSent(batch: Batch, attempt: number, response: KafkajsRecordMetadata[]): void {
    if (this.window.answered(batch, attempt)) {
      batch.requests++;
      const offsets = indexResponse(response);
      const missing = this.config.acks === 0 ? [] : unacknowledged(batch.entries, offsets);
      this.monitor.recovered();
      if (missing.length === 0) {
        this.window.acked(batch, offsets);
      } else {
        // kafkajs can resolve sendBatch without having sent some partitions: when a retry
        // inside it finds a partition's new leader among brokers that already answered, it
        // skips that partition (tulios/kafkajs#1303, open).
        const error = new Error(
          `kafkajs reported the batch written, but the response has no offset for ${missing.join(', ')} ` +
            '(tulios/kafkajs#1303); sending those records again',
        );
        if (this.config.maxInFlight > 1) {
          // Later batches may hold records of these partitions already: go back from here.
          this.retryOrFail(batch, error, true);
        } else {
          const rest = splitOff(batch, offsets);
          // Right behind its batch: a queueing producer may hold a later one (not sent; it comes back).
          this.window.insertAfter(batch, rest);
          this.window.acked(batch, offsets);
          this.retryOrFail(rest, error, true);
        }
      }
    }
    this.pump();
  }

  private onFailed(batch: Batch, attempt: number, error: unknown): void {
    const current = this.window.answered(batch, attempt);
    const notAttempted = isNotAttempted(error);
    // Not sent on this dispatch: whether the batch was ever sent counts only its other dispatches.
    if (notAttempted && batch.attempt === attempt) batch.unsent++;
    if (!current) {
      this.pump();
      return;
    }
    if (notAttempted) {
      // A queueing producer did not send it, as an earlier batch failed: back in the queue, in
      // order, behind that one's re-send; no request was made, so no retry is counted. If the
      // producer is gone, the batch waits for a fresh one.
      if (isProducerGone(error)) this.producers.want();
      this.window.goBack(batch);
      this.pump();
      return;
    }
    batch.requests += attemptsIn(error);
    this.retryOrFail(batch, error, isRetriableSendError(error));
  }

  /**
   * After a dispatched batch failed: schedules it (and every batch dispatched after it) to be
   * sent again after a back-off, or, when the error is not transient or the budget is spent,
   * fails its records.
   */
  private retryOrFail(batch: Batch, error: unknown, retriable: boolean): void {
    const now = Date.now();
    const delay = backoffMs(this.config, batch.resends);
    if (retriable && this.producers.connected && mayResend(this.config, batch, now, delay)) {
      batch.resends++;
      this.monitor.stall(batch.dispatchedAt, asError(error).message, now);
      this.window.goBack(batch);
      this.onEvent?.({
        type: 'retry',
        topics: topicsOf(batch),
        records: batch.count,
        requests: batch.requests,
        elapsedMs: now - batch.createdAt,
        delayMs: delay,
        error,
      });
      this.backoffTimer = setTimeout(this.onBackoffEnd, delay);
      return;
    }
    batch.error = failedError(this.config, batch, error, retriable, !this.producers.connected, now);
    // Whatever the error, the broker may have written part or all of the batch, while kafkajs
    // rolled its sequence numbers back: the next batch must not go out on this producer. A
    // producer that is gone (its thread died) is replaced whatever the settings.
    if (this.config.idempotent || isProducerGone(error)) this.producers.want();
    this.window.failed(batch);
    this.pump();
  }

  private readonly onBackoffEnd = (): void => {
    this.backoffTimer = undefined;
    this.pump();
  };

  /**
   * Replaces the producer by a fresh one, retrying the connection for as long as the sender is
   * open; batches that wait past `delivery.timeout.ms` meanwhile fail. Then sends on.
   */
  private async replaceProducer(): Promise<void> {
    const attempts = await this.producers.replace((error) => {
      const now = Date.now();
      this.monitor.stall(now, `could not connect a fresh producer: ${error.message}`, now);
      this.expireWaiting(now);
    });
    if (attempts === undefined) return;
    this.onEvent?.({ type: 'producer-replaced', attempts });
    this.pump();
  }

  /** Fails the batches, not yet sent, that waited past `delivery.timeout.ms` (while no batch can go out). */
  private expireWaiting(now: number): void {
    const open = this.accumulator.current;
    if (open !== undefined && isExpired(this.config, open, now)) {
      this.accumulator.take();
      this.complete(open, expiredError(this.config, open, now));
    }
    for (const batch of this.window.takeExpired((b) => isExpired(this.config, b, now))) {
      this.complete(batch, expiredError(this.config, batch, now));
    }
  }

  /** Runs every callback of `batch` once: with metadata, or with `error`. */
  private complete(batch: Batch, error: TributaryError | undefined): void {
    if (batch.state === 'done') return;
    batch.state = 'done';
    if (error !== undefined) {
      this.onEvent?.({ type: 'failed', topics: topicsOf(batch), records: batch.count, error });
    }
    callBack(batch, error, this.onAsyncError);
    this.completed += batch.count;
    batch.offsets = undefined;
    const waiters = this.flushWaiters;
    while (waiters.length > 0 && (waiters[0] as { target: number }).target <= this.completed) {
      (waiters.shift() as { resolve: () => void }).resolve();
    }
  }
}

/**
 * Makes a kafkajs client with the producer's `client.id` and request timeout, a
 * {@link KafkajsSender} on it, and connects it.
 *
 * @param options `kafka`: the client settings (brokers, ssl, sasl, logging); `clientId` and
 *   `requestTimeout` come from `config`. The rest as {@link KafkajsSenderOptions}.
 * @returns A connected sender.
 *
 * @example
 * ```ts
 * import { resolveProducerConfig } from './producer-config.js';
 *
 * const config = resolveProducerConfig({}, { name: 'orders' }, { task: 0 });
 * const sender = await createKafkajsSender({ kafka: { brokers: ['127.0.0.1:9092'] }, config });
 * ```
 */
export async function createKafkajsSender(
  options: Omit<KafkajsSenderOptions, 'kafka'> & { readonly kafka: KafkaConfig },
): Promise<KafkajsSender> {
  const kafka = new Kafka({ ...options.kafka, ...kafkajsClientOptions(options.config) });
  const sender = new KafkajsSender({ ...options, kafka });
  await sender.connect();
  return sender;
}
