import type {
  CompressionTypes,
  KafkaConfig,
  RecordMetadata as KafkajsRecordMetadata,
  Producer,
  ProducerConfig,
  TopicMessages,
} from 'kafkajs';
import { TributaryError } from '../api/errors.js';
import type { OutgoingRecord, RecordMetadata, RecordSender, SendCallback, SenderStall } from '../runtime/ports.js';
import { attemptsIn, isKafkajsError, isNotAttempted, isProducerGone, isRetriableSendError } from './kafkajs-errors.js';
import { Kafka } from './kafkajs-fixes.js';
import { indexResponse, type TopicOffsets, unacknowledged } from './produce-response.js';
import { kafkajsClientOptions, type ResolvedProducerConfig } from './producer-config.js';
import { retryStablePartitioner } from './retry-stable-partitioner.js';

/** The part of a kafkajs `Producer` the sender uses. */
export type KafkajsProducerLike = Pick<Producer, 'connect' | 'disconnect' | 'sendBatch'> & {
  /**
   * Set by a producer that, with one request in flight, takes up to this many `sendBatch` calls
   * at once and writes them one after another in call order (the producer thread of
   * kafkajs-thread.ts): the sender then hands over the next batch while one is on the wire.
   * After a call fails, or resolves without an offset for some partition, such a producer
   * writes none of the calls made before it heard of every answer: it rejects them with an error
   * whose `notAttempted` is true, and the sender sends them again, in order, after the earlier one.
   */
  readonly queueDepth?: number | undefined;
};

/** The part of a kafkajs `Kafka` client the sender uses: a real `Kafka` instance fits. */
export interface KafkajsLike {
  producer(config: ProducerConfig): KafkajsProducerLike;
}

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
 * How many times kafkajs itself retries one `sendBatch` call before handing the failure back to
 * the sender, which re-sends within `delivery.timeout.ms`. Small, so that the sender regains
 * control (and checks its deadline) every few seconds during an outage.
 */
const KAFKAJS_RETRIES_PER_CALL = 5;
/** How often, in ms, the sender checks for unanswered requests while records wait, and re-reports a stall. */
const WATCH_INTERVAL_MS = 1000;
/** How often, in ms, a lasting stall is reported again (with its duration). */
const STALL_REPORT_INTERVAL_MS = 5000;
/** How many topic names an error message lists before "and N more". */
const TOPICS_IN_MESSAGES = 5;

/**
 * A message as the sender builds it: kafkajs's `Message`, but with a numeric timestamp (its
 * type says string; its encoder takes numbers, and a string per record would cost an allocation).
 *
 * A record with neither headers nor a timestamp gets only `key`, `value` and `partition`, the
 * shape of a plain kafkajs program's messages, because kafkajs's Produce encoder is much cheaper
 * for it: it copies every message into a new object with all its fields, and when any message
 * of a partition has a timestamp it maps, filters and sorts (with the default, string,
 * comparator) the partition's timestamps on every request. Without one, kafkajs writes the time
 * of encoding (one `Date.now()` per partition and request) as the record's CreateTime, as the
 * Java producer writes the time of `send()`.
 */
interface OutMessage {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: Readonly<Record<string, Buffer | string>> | undefined;
  /** Set by the caller, or by {@link retryStablePartitioner} on the first attempt. */
  partition: number | undefined;
  /** The record's own timestamp; absent lets kafkajs stamp it (kafkajs treats 0 as absent too). */
  readonly timestamp?: number | undefined;
}

/** One topic's share of a batch; also the `TopicMessages` entry handed to kafkajs. */
interface TopicEntry {
  readonly topic: string;
  readonly messages: OutMessage[];
  readonly callbacks: SendCallback[];
}

type BatchState = 'open' | 'queued' | 'inflight' | 'acked' | 'failed' | 'done';

/** The records of one `sendBatch` request, kept as they are across re-sends. */
interface Batch {
  readonly createdAt: number;
  readonly entries: TopicEntry[];
  /** The last entry appended to: records of one topic usually come in runs. */
  last: TopicEntry | undefined;
  count: number;
  bytes: number;
  /** Linger elapsed or flush asked: send as soon as a slot is free. */
  due: boolean;
  state: BatchState;
  /** Dispatch number; a result from an earlier dispatch is stale and ignored. */
  attempt: number;
  /** Dispatches a queueing producer answered "not attempted": they sent nothing. */
  unsent: number;
  /** Requests made so far, kafkajs's internal retries included. */
  requests: number;
  /** Times the sender itself re-sent the batch (drives the back-off). */
  resends: number;
  /** `completions` when the batch was last dispatched: batches completed later overlapped it. */
  dispatchedAfter: number;
  /** `Date.now()` when the batch was last dispatched. */
  dispatchedAt: number;
  /** Where the records landed, once acknowledged. */
  offsets: Map<string, TopicOffsets> | undefined;
  error: TributaryError | undefined;
}

type Lifecycle = 'idle' | 'connecting' | 'connected' | 'closed';

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
 * Known limits: kafkajs retries a call {@link KAFKAJS_RETRIES_PER_CALL} times before the sender
 * takes over, so kafkajs logs once per producer that limiting retries "may invalidate EoS
 * guarantees"; with one batch in flight that does not hold here, since kafkajs rolls its
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
  private readonly kafka: KafkajsLike;
  private readonly producerOptions: ProducerConfig;
  private producer: KafkajsProducerLike;
  private readonly config: ResolvedProducerConfig;
  private readonly compression: CompressionTypes;
  private readonly onAsyncError: (error: Error) => void;
  private readonly onEvent: ((event: KafkajsSenderEvent) => void) | undefined;

  private lifecycle: Lifecycle = 'idle';
  private closing: Promise<void> | undefined;
  /** The batch records are appended to. */
  private open: Batch | undefined;
  private lingerTimer: NodeJS.Timeout | undefined;
  /** Sealed batches waiting for a slot, oldest first (re-sends go to the front). */
  private ready: Batch[] = [];
  /** Dispatched batches not yet completed, in dispatch order; completed from the head. */
  private window: Batch[] = [];
  /** `sendBatch` calls not yet settled (stale ones included). */
  private outstanding = 0;
  /** After a failure: dispatch nothing until every outstanding call has settled. */
  private settling = false;
  private backoffTimer: NodeJS.Timeout | undefined;
  private accepted = 0;
  private completed = 0;
  /** Batches acknowledged so far (with several in flight: for the overtaking check). */
  private completions = 0;
  /**
   * With several in flight: per `topic\0partition`, the base offset of the last acknowledged
   * batch there and the `completions` count it was acknowledged at.
   */
  private readonly lastBase = new Map<string, { base: number; at: number }>();
  private flushWaiters: { target: number; resolve: () => void }[] = [];
  /**
   * `wanted` after giving up on a sent batch of an idempotent producer: nothing is dispatched
   * until `running` has replaced the producer (see {@link replaceProducer}).
   */
  private replacement: 'none' | 'wanted' | 'running' = 'none';
  private readonly stallListeners: Array<(stall: SenderStall | undefined) => void> = [];
  /** While records wait without acknowledgements: since when, and the last symptom. */
  private stalled: { since: number; reason: string; reportedAt: number } | undefined;
  private watchTimer: NodeJS.Timeout | undefined;
  /** Ends the back-off between connection attempts of a fresh producer (on close). */
  private wakeReplacement: (() => void) | undefined;

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
    this.kafka = options.kafka;
    this.producerOptions = {
      createPartitioner: retryStablePartitioner,
      idempotent: config.idempotent,
      maxInFlightRequests: config.maxInFlight,
      metadataMaxAge: config.metadataMaxAgeMs,
      retry: {
        // With several batches in flight, a retry inside kafkajs could let a later batch
        // overtake an earlier one; the sender must see every failure to re-send in order.
        retries: config.maxInFlight > 1 ? 0 : Math.min(config.retries, KAFKAJS_RETRIES_PER_CALL),
        initialRetryTime: Math.max(1, config.retryBackoffMs),
        maxRetryTime: config.retryBackoffMaxMs,
        multiplier: 2,
        factor: 0.2,
      },
    };
    this.producer = this.kafka.producer(this.producerOptions);
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
    this.stallListeners.push(listener);
  }

  /**
   * Connects the producer (and, when idempotent, obtains its producer id). Records sent before
   * are held and go out once connected.
   *
   * @throws Whatever kafkajs's `connect()` rejects with; the sender may be connected again.
   */
  async connect(): Promise<void> {
    if (this.lifecycle !== 'idle') {
      throw new TributaryError('SEND_FAILED', `KafkajsSender.connect() called while ${this.lifecycle}`);
    }
    this.lifecycle = 'connecting';
    try {
      await this.producer.connect();
    } catch (e) {
      if (this.lifecycle === 'connecting') this.lifecycle = 'idle';
      throw e;
    }
    if (this.lifecycle !== 'connecting') {
      // Closed meanwhile: close()'s disconnect may have run before the connection was made.
      await this.disconnectQuietly(this.producer);
      return;
    }
    this.lifecycle = 'connected';
    this.pump();
  }

  /**
   * Queues a record; `onDone` runs once, later, with its metadata or a `SEND_FAILED` error.
   * Never throws. After {@link close} the record fails at once (asynchronously).
   */
  send(record: OutgoingRecord, onDone: SendCallback): void {
    if (this.lifecycle === 'closed') {
      const error = new TributaryError(
        'SEND_FAILED',
        `A record for topic '${record.topic}' was sent after the Kafka producer was closed; it was not written.`,
      );
      queueMicrotask(() => onDone(error, undefined));
      return;
    }
    const batch = this.open ?? this.openBatch();
    let entry = batch.last;
    if (entry === undefined || entry.topic !== record.topic) entry = this.entryFor(batch, record.topic);
    const key = record.key;
    const value = record.value;
    const headers = record.headers;
    const timestamp = record.timestamp;
    // Two shapes only (see OutMessage): the lean one unless the record needs the other fields.
    entry.messages.push(
      headers === undefined && timestamp === undefined
        ? { key, value, partition: record.partition }
        : { key, value, headers, partition: record.partition, timestamp },
    );
    entry.callbacks.push(onDone);
    let bytes = (key === null ? 0 : key.length) + (value === null ? 0 : value.length);
    if (headers !== undefined) {
      for (const name in headers) {
        const v = headers[name];
        // String values count their UTF-16 length: close enough for a size estimate.
        if (v !== undefined) bytes += name.length + v.length;
      }
    }
    batch.count++;
    batch.bytes += bytes;
    this.accepted++;
    if (batch.bytes >= this.config.batchSizeBytes || batch.count >= this.config.batchMaxRecords) {
      this.seal();
      batch.state = 'queued';
      this.ready.push(batch);
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
    const open = this.open;
    if (open !== undefined) {
      open.due = true;
      this.pump();
    }
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
    const wasConnecting = this.lifecycle !== 'idle';
    this.lifecycle = 'closed';
    // Taken before seal(), which detaches it: its records must be called back too.
    const open = this.open;
    this.seal();
    if (this.backoffTimer !== undefined) {
      clearTimeout(this.backoffTimer);
      this.backoffTimer = undefined;
    }
    if (this.watchTimer !== undefined) {
      clearTimeout(this.watchTimer);
      this.watchTimer = undefined;
    }
    this.wakeReplacement?.();
    this.wakeReplacement = undefined;
    const pending = [...this.window, ...this.ready];
    if (open !== undefined) pending.push(open);
    this.window = [];
    this.ready = [];
    this.open = undefined;
    for (const batch of pending) {
      if (batch.state === 'acked') this.complete(batch, undefined);
      else if (batch.state === 'failed') this.complete(batch, batch.error);
      else this.complete(batch, this.closedError(batch));
    }
    if (!wasConnecting) return;
    try {
      await this.producer.disconnect();
    } catch (e) {
      this.onAsyncError(asError(e));
    }
  }

  private async disconnectQuietly(producer: KafkajsProducerLike): Promise<void> {
    try {
      await producer.disconnect();
    } catch (e) {
      this.onAsyncError(asError(e));
    }
  }

  private openBatch(): Batch {
    const batch = newBatch(Date.now());
    this.open = batch;
    this.lingerTimer = setTimeout(this.onLinger, this.config.lingerMs);
    return batch;
  }

  private entryFor(batch: Batch, topic: string): TopicEntry {
    // A batch rarely spans more than a few topics: a scan beats a Map here.
    let entry: TopicEntry | undefined;
    for (const e of batch.entries) {
      if (e.topic === topic) {
        entry = e;
        break;
      }
    }
    if (entry === undefined) {
      entry = { topic, messages: [], callbacks: [] };
      batch.entries.push(entry);
    }
    batch.last = entry;
    return entry;
  }

  private readonly onLinger = (): void => {
    this.lingerTimer = undefined;
    const open = this.open;
    if (open !== undefined) {
      open.due = true;
      this.pump();
    }
  };

  /** Detaches the open batch from `send` (it keeps its records). */
  private seal(): void {
    this.open = undefined;
    if (this.lingerTimer !== undefined) {
      clearTimeout(this.lingerTimer);
      this.lingerTimer = undefined;
    }
  }

  /** Dispatches as many batches as slots allow, oldest first. */
  private pump(): void {
    if (this.lifecycle !== 'connected' || this.backoffTimer !== undefined) return;
    if (this.settling) {
      if (this.outstanding > 0) return;
      this.settling = false;
    }
    if (this.replacement !== 'none') {
      if (this.replacement === 'wanted' && this.outstanding === 0) void this.replaceProducer();
      return;
    }
    const slots = this.config.maxInFlight === 1 ? (this.producer.queueDepth ?? 1) : this.config.maxInFlight;
    while (this.outstanding < slots) {
      let batch = this.ready.shift();
      if (batch === undefined) {
        const open = this.open;
        if (open === undefined || !open.due) return;
        this.seal();
        batch = open;
      }
      const now = Date.now();
      if (now >= batch.createdAt + this.config.deliveryTimeoutMs) {
        // A batch sent before (waiting for its re-send) may have been written, and kafkajs
        // rolled its sequence numbers back: as after any give-up, nothing more on this producer.
        const sentBefore = batch.attempt > batch.unsent && this.config.idempotent;
        if (sentBefore) this.replacement = 'wanted';
        this.complete(batch, this.expiredError(batch, now));
        if (sentBefore) {
          this.pump();
          return;
        }
        continue;
      }
      this.dispatch(batch);
    }
  }

  private dispatch(batch: Batch): void {
    batch.state = 'inflight';
    const attempt = ++batch.attempt;
    batch.dispatchedAfter = this.completions;
    batch.dispatchedAt = Date.now();
    this.window.push(batch);
    this.outstanding++;
    this.watch();
    let sending: Promise<KafkajsRecordMetadata[]>;
    try {
      sending = this.producer.sendBatch({
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
    this.outstanding--;
    if (batch.attempt === attempt && batch.state === 'inflight') {
      batch.requests++;
      const offsets = indexResponse(response);
      const missing = this.config.acks === 0 ? [] : unacknowledged(batch.entries, offsets);
      if (this.stalled !== undefined) this.unstall();
      if (missing.length === 0) {
        batch.state = 'acked';
        batch.offsets = offsets;
        this.completeWindowHead();
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
          rest.state = 'inflight';
          // Right behind its batch: a queueing producer may hold a later one (not sent; it comes back).
          this.window.splice(this.window.indexOf(batch) + 1, 0, rest);
          batch.state = 'acked';
          batch.offsets = offsets;
          this.completeWindowHead();
          this.retryOrFail(rest, error, true);
        }
      }
    }
    this.pump();
  }

  private onFailed(batch: Batch, attempt: number, error: unknown): void {
    this.outstanding--;
    const notAttempted = isNotAttempted(error);
    // Not sent on this dispatch: whether the batch was ever sent counts only its other dispatches.
    if (notAttempted && batch.attempt === attempt) batch.unsent++;
    if (batch.attempt !== attempt || batch.state !== 'inflight') {
      this.pump();
      return;
    }
    if (notAttempted) {
      // A queueing producer did not send it, as an earlier batch failed: back in the queue, in
      // order, behind that one's re-send; no request was made, so no retry is counted. If the
      // producer is gone, the batch waits for a fresh one.
      if (isProducerGone(error) && this.lifecycle === 'connected') {
        this.replacement = 'wanted';
      }
      this.goBack(batch);
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
    const delay = Math.min(this.config.retryBackoffMs * 2 ** batch.resends, this.config.retryBackoffMaxMs);
    if (
      retriable &&
      this.lifecycle === 'connected' &&
      batch.requests <= this.config.retries &&
      now + delay < batch.createdAt + this.config.deliveryTimeoutMs
    ) {
      batch.resends++;
      this.stall(batch.dispatchedAt, asError(error).message, now);
      this.goBack(batch);
      this.onEvent?.({
        type: 'retry',
        topics: batch.entries.map((e) => e.topic),
        records: batch.count,
        requests: batch.requests,
        elapsedMs: now - batch.createdAt,
        delayMs: delay,
        error,
      });
      this.backoffTimer = setTimeout(this.onBackoffEnd, delay);
      return;
    }
    batch.state = 'failed';
    batch.error = this.failedError(batch, error, retriable, now);
    // Whatever the error, the broker may have written part or all of the batch, while kafkajs
    // rolled its sequence numbers back: the next batch must not go out on this producer. A
    // producer that is gone (its thread died) is replaced whatever the settings.
    if ((this.config.idempotent || isProducerGone(error)) && this.lifecycle === 'connected') this.replacement = 'wanted';
    this.completeWindowHead();
    this.pump();
  }

  /**
   * Replaces the producer by a fresh one (a new producer id, sequence numbers from 0), retrying
   * the connection with back-off for as long as the sender is open; batches that wait past
   * `delivery.timeout.ms` meanwhile fail. Then sends on.
   */
  private async replaceProducer(): Promise<void> {
    this.replacement = 'running';
    let attempts = 0;
    for (;;) {
      const old = this.producer;
      this.producer = this.kafka.producer(this.producerOptions);
      try {
        await old.disconnect();
      } catch (e) {
        this.onAsyncError(asError(e));
      }
      if (this.lifecycle !== 'connected') return;
      attempts++;
      try {
        await this.producer.connect();
        // Closed meanwhile: close()'s disconnect may have run before the connection was made.
        if (this.lifecycle !== 'connected') await this.disconnectQuietly(this.producer);
        break;
      } catch (e) {
        if (this.lifecycle !== 'connected') return;
        const now = Date.now();
        this.stall(now, `could not connect a fresh producer: ${asError(e).message}`, now);
        this.expireWaiting(now);
        const delay = Math.min(this.config.retryBackoffMs * 2 ** (attempts - 1), this.config.retryBackoffMaxMs);
        await new Promise<void>((resolve) => {
          this.wakeReplacement = resolve;
          this.backoffTimer = setTimeout(() => {
            this.backoffTimer = undefined;
            this.wakeReplacement = undefined;
            resolve();
          }, delay);
        });
        if (this.lifecycle !== 'connected') return;
      }
    }
    // Closed while connecting: close() disconnects whichever producer is current.
    if (this.lifecycle !== 'connected') return;
    this.replacement = 'none';
    this.onEvent?.({ type: 'producer-replaced', attempts });
    this.pump();
  }

  /** Fails the batches, not yet sent, that waited past `delivery.timeout.ms` (while no batch can go out). */
  private expireWaiting(now: number): void {
    const deadline = this.config.deliveryTimeoutMs;
    const open = this.open;
    if (open !== undefined && now >= open.createdAt + deadline) {
      this.seal();
      this.complete(open, this.expiredError(open, now));
    }
    const keep: Batch[] = [];
    for (const batch of this.ready) {
      if (now >= batch.createdAt + deadline) this.complete(batch, this.expiredError(batch, now));
      else keep.push(batch);
    }
    this.ready = keep;
  }

  /** Keeps a timer running while records wait, to notice requests that go unanswered. */
  private watch(): void {
    if (this.watchTimer !== undefined || this.lifecycle === 'closed') return;
    this.watchTimer = setTimeout(this.onWatch, WATCH_INTERVAL_MS);
    this.watchTimer.unref?.();
  }

  private readonly onWatch = (): void => {
    this.watchTimer = undefined;
    if (this.lifecycle === 'closed') return;
    if (this.pending === 0) {
      if (this.stalled !== undefined) this.unstall();
      return;
    }
    const now = Date.now();
    const stalled = this.stalled;
    if (stalled === undefined) {
      const head = this.window[0];
      if (head !== undefined && now - head.dispatchedAt >= this.config.requestTimeoutMs) {
        this.stall(head.dispatchedAt, `no answer from Kafka within request.timeout.ms=${this.config.requestTimeoutMs}`, now);
      }
    } else if (now - stalled.reportedAt >= STALL_REPORT_INTERVAL_MS) {
      stalled.reportedAt = now;
      this.reportStall({ since: stalled.since, durationMs: now - stalled.since, reason: stalled.reason });
    }
    this.watch();
  };

  /** Notes that records are not being acknowledged; reports it the first time. */
  private stall(since: number, reason: string, now: number): void {
    const stalled = this.stalled;
    if (stalled !== undefined) {
      stalled.reason = reason;
      return;
    }
    this.stalled = { since, reason, reportedAt: now };
    this.reportStall({ since, durationMs: now - since, reason });
    this.watch();
  }

  private unstall(): void {
    this.stalled = undefined;
    this.reportStall(undefined);
  }

  private reportStall(stall: SenderStall | undefined): void {
    for (const listener of this.stallListeners) {
      try {
        listener(stall);
      } catch (e) {
        this.onAsyncError(asError(e));
      }
    }
  }

  private readonly onBackoffEnd = (): void => {
    this.backoffTimer = undefined;
    this.pump();
  };

  /**
   * Puts `batch` and every batch dispatched after it back at the front of the queue, in order,
   * and holds dispatching until the calls still outstanding have settled: re-sending the failed
   * batch alone could let a later one overtake it.
   */
  private goBack(batch: Batch): void {
    const at = this.window.indexOf(batch);
    const again = this.window.splice(at);
    const requeue: Batch[] = [];
    for (const b of again) {
      if (b.state === 'failed') {
        this.complete(b, b.error);
      } else {
        b.state = 'queued';
        b.offsets = undefined;
        requeue.push(b);
      }
    }
    this.ready.unshift(...requeue);
    this.settling = true;
  }

  /** Completes dispatched batches from the oldest while they are settled, keeping ack order. */
  private completeWindowHead(): void {
    while (this.window.length > 0) {
      const head = this.window[0] as Batch;
      if (head.state === 'acked') {
        if (this.config.maxInFlight > 1 && this.overtaken(head)) {
          this.onEvent?.({ type: 'reordered', topics: head.entries.map((e) => e.topic), records: head.count });
          this.goBack(head);
          return;
        }
        this.complete(head, undefined);
      } else if (head.state === 'failed') {
        this.complete(head, head.error);
      } else {
        return;
      }
      this.window.shift();
    }
  }

  /**
   * True when an earlier batch that was in flight at the same time as `batch` landed after it
   * in one of its partitions (a smaller or equal base offset than that batch's). kafkajs does
   * not keep concurrent `sendBatch` calls in call order: each awaits metadata and connection
   * steps before it writes its request. Otherwise records the batch's base offsets.
   */
  private overtaken(batch: Batch): boolean {
    const offsets = batch.offsets ?? new Map<string, TopicOffsets>();
    for (const [topic, { next }] of offsets) {
      for (let p = 0; p < next.length; p++) {
        const base = next[p] as number;
        const before = this.lastBase.get(`${topic}\0${p}`);
        // Only a batch acknowledged after this one was dispatched can have overtaken it; an
        // inversion against an older one means the partition was truncated or recreated.
        if (before !== undefined && before.at > batch.dispatchedAfter && base >= 0 && base <= before.base) return true;
      }
    }
    this.completions++;
    for (const [topic, { next }] of offsets) {
      for (let p = 0; p < next.length; p++) {
        const base = next[p] as number;
        if (base >= 0) this.lastBase.set(`${topic}\0${p}`, { base, at: this.completions });
      }
    }
    return false;
  }

  /** Runs every callback of `batch` once: with metadata, or with `error`. */
  private complete(batch: Batch, error: TributaryError | undefined): void {
    if (batch.state === 'done') return;
    batch.state = 'done';
    if (error !== undefined) {
      this.onEvent?.({ type: 'failed', topics: batch.entries.map((e) => e.topic), records: batch.count, error });
    }
    const offsets = error === undefined ? batch.offsets : undefined;
    for (const entry of batch.entries) {
      const { topic, messages, callbacks } = entry;
      const topicOffsets = offsets?.get(topic);
      const next = topicOffsets?.next ?? [];
      const appendTimes = topicOffsets?.logAppendTime ?? [];
      const n = callbacks.length;
      let i = 0;
      // One try per batch, re-entered only when a callback throws, so that a throwing callback
      // neither skips the others nor puts a try on the per-record path.
      while (i < n) {
        try {
          for (; i < n; i++) {
            const onDone = callbacks[i] as SendCallback;
            if (error !== undefined) {
              onDone(error, undefined);
              continue;
            }
            const message = messages[i] as OutMessage;
            const partition = message.partition ?? -1;
            let offset = -1;
            let timestamp = message.timestamp;
            if (partition >= 0 && partition < next.length) {
              const o = next[partition] as number;
              if (o >= 0) {
                offset = o;
                next[partition] = o + 1;
              }
              const appended = appendTimes[partition] as number;
              if (appended >= 0) timestamp = appended;
            }
            const metadata: RecordMetadata = { topic, partition, offset, timestamp };
            onDone(undefined, metadata);
          }
        } catch (e) {
          i++;
          this.onAsyncError(asError(e));
        }
      }
    }
    this.completed += batch.count;
    batch.offsets = undefined;
    this.resolveFlushes();
  }

  private resolveFlushes(): void {
    const waiters = this.flushWaiters;
    while (waiters.length > 0 && (waiters[0] as { target: number }).target <= this.completed) {
      (waiters.shift() as { resolve: () => void }).resolve();
    }
  }

  private failedError(batch: Batch, cause: unknown, retriable: boolean, now: number): TributaryError {
    const what = `${batch.count} record(s) for ${topicList(batch)}`;
    const detail = asError(cause).message;
    if (!retriable && !isKafkajsError(cause)) {
      // Not Kafka's answer: the producer itself failed (its thread died, a value it cannot encode).
      return new TributaryError('SEND_FAILED', `Could not write ${what}: the producer failed: ${detail} (not retried).`, {
        cause,
      });
    }
    if (!retriable) {
      return new TributaryError(
        'SEND_FAILED',
        `Kafka refused ${what}: ${detail} (not a transient error, so not retried). ` +
          'Check that the topic exists or may be auto-created, that this client may write to it, ' +
          `and that no record exceeds the topic's max.message.bytes (batch.size is ${this.config.batchSizeBytes} bytes).`,
        { cause },
      );
    }
    const why =
      this.lifecycle !== 'connected'
        ? 'the producer was closed'
        : batch.requests > this.config.retries
          ? `retries=${this.config.retries} is used up`
          : `delivery.timeout.ms=${this.config.deliveryTimeoutMs} would pass before the next attempt`;
    return new TributaryError(
      'SEND_FAILED',
      `Could not write ${what}: gave up after ${now - batch.createdAt} ms and ${batch.requests} request(s) because ${why}; ` +
        `last error: ${detail}. Check that the brokers in bootstrap.servers are up and reachable from this worker ` +
        'and that every partition has a leader (and enough in-sync replicas for acks=all); raise delivery.timeout.ms, ' +
        'or leave it unset to retry until the brokers answer, to ride out longer outages.',
      { cause },
    );
  }

  private expiredError(batch: Batch, now: number): TributaryError {
    if (batch.attempt > batch.unsent) {
      return new TributaryError(
        'SEND_FAILED',
        `Could not write ${batch.count} record(s) for ${topicList(batch)}: delivery.timeout.ms=${this.config.deliveryTimeoutMs} ` +
          `passed before they could be sent again (after ${now - batch.createdAt} ms and ${batch.requests} request(s)); ` +
          'they may or may not have been written. Check that the brokers in bootstrap.servers are up and reachable from this worker.',
      );
    }
    return new TributaryError(
      'SEND_FAILED',
      `Could not write ${batch.count} record(s) for ${topicList(batch)}: not sent within delivery.timeout.ms=` +
        `${this.config.deliveryTimeoutMs} (waited ${now - batch.createdAt} ms behind earlier batches being retried). ` +
        'Check that the brokers in bootstrap.servers are up and reachable from this worker.',
    );
  }

  private closedError(batch: Batch): TributaryError {
    return new TributaryError(
      'SEND_FAILED',
      `The Kafka producer was closed before ${batch.count} record(s) for ${topicList(batch)} were acknowledged; ` +
        'they may or may not have been written. Call flush() before close() to wait for them.',
    );
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

function newBatch(createdAt: number): Batch {
  return {
    createdAt,
    entries: [],
    last: undefined,
    count: 0,
    bytes: 0,
    due: false,
    state: 'open',
    attempt: 0,
    unsent: 0,
    requests: 0,
    resends: 0,
    dispatchedAfter: 0,
    dispatchedAt: 0,
    offsets: undefined,
    error: undefined,
  };
}

/**
 * Moves the records the response has no offset for out of `batch` into a new batch with the
 * same deadline and retry counts, keeping their order.
 */
function splitOff(batch: Batch, offsets: Map<string, TopicOffsets>): Batch {
  const rest = newBatch(batch.createdAt);
  // Sent as part of the batch (kafkajs may have sent them before a retry left them out).
  rest.attempt = batch.attempt;
  rest.unsent = batch.unsent;
  rest.requests = batch.requests;
  rest.resends = batch.resends;
  // Went out with the batch: a stall report of it counts from then (it said "since 1970").
  rest.dispatchedAt = batch.dispatchedAt;
  rest.dispatchedAfter = batch.dispatchedAfter;
  const kept: TopicEntry[] = [];
  for (const { topic, messages, callbacks } of batch.entries) {
    const next = offsets.get(topic)?.next ?? [];
    const keep: TopicEntry = { topic, messages: [], callbacks: [] };
    const move: TopicEntry = { topic, messages: [], callbacks: [] };
    for (let i = 0; i < messages.length; i++) {
      const m = messages[i] as OutMessage;
      const p = m.partition;
      const target = p !== undefined && p < next.length && (next[p] as number) >= 0 ? keep : move;
      target.messages.push(m);
      target.callbacks.push(callbacks[i] as SendCallback);
    }
    if (keep.messages.length > 0) kept.push(keep);
    if (move.messages.length > 0) {
      rest.entries.push(move);
      rest.count += move.messages.length;
    }
  }
  batch.entries.length = 0;
  batch.entries.push(...kept);
  batch.count -= rest.count;
  return rest;
}

function topicList(batch: Batch): string {
  const topics = batch.entries.map((e) => `'${e.topic}'`);
  if (topics.length === 1) return `topic ${topics[0]}`;
  const shown = topics.slice(0, TOPICS_IN_MESSAGES).join(', ');
  const more = topics.length - TOPICS_IN_MESSAGES;
  return `topics ${shown}${more > 0 ? ` and ${more} more` : ''}`;
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}
