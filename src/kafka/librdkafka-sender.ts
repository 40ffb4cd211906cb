import { createRequire } from 'node:module';
import { join } from 'node:path';
import { TributaryError } from '../api/errors.js';
import type { OutgoingRecord, RecordSender, SendCallback, SenderStall } from '../runtime/ports.js';
import type { ResolvedProducerConfig } from './producer-config.js';

/** The part of `@confluentinc/kafka-javascript`'s librdkafka `Producer` this sender uses. */
export interface RdkafkaProducerLike {
  connect(options: object, cb: (error: Error | null) => void): unknown;
  disconnect(cb: (error?: Error | null) => void): unknown;
  produce(
    topic: string,
    partition: number | null,
    value: Buffer | null,
    key: Buffer | null,
    timestamp: number | null,
    opaque: unknown,
    headers: Array<Record<string, string | Buffer>> | undefined,
  ): unknown;
  setPollInterval(ms: number): unknown;
  flush(timeoutMs: number, cb: (error: Error | null) => void): unknown;
  on(event: 'delivery-report', listener: (error: Error | null, report: RdkafkaDeliveryReport) => void): unknown;
  on(event: 'event.error', listener: (error: RdkafkaError) => void): unknown;
}

/** An error librdkafka reports outside any record (`event.error`): broker down, transport, fatal. */
export interface RdkafkaError extends Error {
  readonly code?: number;
  readonly isFatal?: boolean;
}

/** Options of {@link LibrdkafkaSender}. */
export interface LibrdkafkaSenderOptions {
  /**
   * How long records may wait without any delivery report before the sender reports a stall
   * (see {@link LibrdkafkaSender.onStall}); the producer's `request.timeout.ms`. Default 30000.
   */
  readonly stallAfterMs?: number;
}

/** What connect() uses beyond {@link RdkafkaProducerLike}: log events and polling while connecting. */
interface RdkafkaConnecting {
  on(event: 'event.log', listener: (log: { severity: number; fac: string; message: string }) => void): unknown;
  poll(): unknown;
}

/** A delivery report of librdkafka. */
export interface RdkafkaDeliveryReport {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly timestamp?: number;
  readonly opaque?: unknown;
}

/** The module `@confluentinc/kafka-javascript`, as far as the librdkafka senders need it. */
export interface RdkafkaModule {
  Producer: new (config: Record<string, unknown>) => RdkafkaProducerLike;
  librdkafkaVersion: string;
}

/** librdkafka's error code for a full local queue (RD_KAFKA_RESP_ERR__QUEUE_FULL). */
const QUEUE_FULL = -184;
/** How often, in ms, the sender checks for a stall while records wait. */
const WATCH_INTERVAL_MS = 1000;
/** How often, in ms, a lasting stall is reported again. */
const STALL_REPORT_INTERVAL_MS = 5000;
/** How long close() lets librdkafka deliver what it holds. */
const FLUSH_AT_CLOSE_MS = 5000;
/** How long close() waits, after librdkafka's flush, for its delivery reports to reach JavaScript. */
const REPORTS_AFTER_FLUSH_MS = 2000;

/**
 * A {@link RecordSender} on librdkafka, through `@confluentinc/kafka-javascript` (an optional
 * peer dependency: `CKJS_LINKING=dynamic npm install @confluentinc/kafka-javascript`). librdkafka
 * batches, compresses, retries and keeps order itself (idempotent, up to 5 requests in flight),
 * in native code: each record is one `produce()` call and one delivery report.
 *
 * Selected with the worker config `sender=librdkafka`. The `producer.*` settings map to
 * librdkafka's (`delivery.timeout.ms` is its `message.timeout.ms`; unset, it is 0: librdkafka
 * retries until the broker answers). Keyed records are placed with murmur2, as Java's producer.
 *
 * After a timeout whose outcome is unknown, librdkafka's idempotent producer does not reuse the
 * sequence numbers on the same producer id (it bumps the epoch, or raises a fatal error after
 * which every record fails): records are never acknowledged for data the broker did not write.
 */
export class LibrdkafkaSender implements RecordSender {
  private outstanding = 0;
  private idle: Array<() => void> = [];
  /** Records refused because librdkafka's queue was full, sent again as reports free room. */
  /** Records librdkafka's queue had no room for, in order, from {@link backlogHead} on (a shift per record would be linear). */
  private backlog: Array<[OutgoingRecord, SendCallback] | undefined> = [];
  private backlogHead = 0;
  private readonly stallAfterMs: number;
  private readonly stallListeners: Array<(stall: SenderStall | undefined) => void> = [];
  /** `Date.now()` at the last delivery report, or when records started to wait. */
  private lastProgress = 0;
  /** Delivery reports so far; the watch timer turns a change into {@link lastProgress} (no clock read per record). */
  private reports = 0;
  private reportsSeen = 0;
  /** The last error librdkafka reported outside a record. */
  private lastError: string | undefined;
  private stalled: { since: number; reportedAt: number } | undefined;
  private watchTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private closing: Promise<void> | undefined;
  /** Callbacks of records handed to librdkafka and not reported yet, by the id passed as opaque. */
  private readonly unreported = new Map<number, SendCallback>();
  private nextId = 0;

  constructor(
    private readonly producer: RdkafkaProducerLike,
    options: LibrdkafkaSenderOptions = {},
  ) {
    this.stallAfterMs = options.stallAfterMs ?? 30_000;
    producer.on('delivery-report', (error, report) => this.delivered(error, report));
    producer.on('event.error', (error) => this.onClientError(error));
  }

  /**
   * Registers a listener for stalls: called with a {@link SenderStall} when librdkafka reports
   * a broker error while records wait, or no delivery report comes for `request.timeout.ms`;
   * again every few seconds while that lasts; with `undefined` once a record is acknowledged or
   * none waits any more.
   */
  onStall(listener: (stall: SenderStall | undefined) => void): void {
    this.stallListeners.push(listener);
  }

  /**
   * Loads `@confluentinc/kafka-javascript` from `baseDir` and connects a producer with `config`
   * and the security settings `security` (see `librdkafkaSecurityConfig`). A connection failure
   * that librdkafka reports as an error (SSL handshake, authentication) ends the connect at
   * once with librdkafka's line, instead of waiting out the metadata timeout.
   */
  static async connect(
    bootstrapServers: string,
    config: ResolvedProducerConfig,
    baseDir = process.cwd(),
    security: Readonly<Record<string, unknown>> = {},
  ): Promise<LibrdkafkaSender> {
    const rd = loadRdkafka(baseDir);
    const producer = new rd.Producer({ ...librdkafkaConfig(bootstrapServers, config), ...security, event_cb: true });
    const connecting$ = producer as RdkafkaProducerLike & Partial<RdkafkaConnecting>;
    let connecting = true;
    // Events are only delivered when the client is polled; during connect nothing polls it.
    const poller = setInterval(() => {
      try {
        connecting$.poll?.();
      } catch {
        // not connected yet
      }
    }, 20);
    try {
      await new Promise<void>((resolve, reject) => {
        connecting$.on?.('event.log', (log) => {
          if (connecting && log.severity <= 3 && log.fac === 'FAIL' && /SSL|SASL|authentication/i.test(log.message)) {
            connecting = false;
            reject(
              new TributaryError(
                'BROKER_SECURITY',
                `librdkafka cannot connect to ${bootstrapServers}: ${log.message.replace(/^\[thrd:[^\]]*\]: /, '')}`,
              ),
            );
          }
        });
        producer.connect({}, (error) => {
          if (connecting) {
            connecting = false;
            if (error) reject(brokerError(error, bootstrapServers));
            else resolve();
          } else if (!error) {
            // Given up on already (a security error): librdkafka's connect finished after all.
            producer.disconnect(() => {});
          }
          // A failed connect has disconnected itself; disconnecting while it still waits for
          // metadata would block until librdkafka's timeout.
        });
      });
    } finally {
      clearInterval(poller);
    }
    producer.setPollInterval(5);
    return new LibrdkafkaSender(producer, { stallAfterMs: config.requestTimeoutMs });
  }

  send(record: OutgoingRecord, onDone: SendCallback): void {
    if (this.outstanding === 0) {
      this.lastProgress = Date.now();
      this.watch();
    }
    this.outstanding++;
    if (this.backlogHead < this.backlog.length || !this.produce(record, onDone)) this.backlog.push([record, onDone]);
  }

  async flush(): Promise<void> {
    if (this.outstanding === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  /**
   * Waits up to 5 s for librdkafka to deliver what it holds and for its delivery reports to
   * reach JavaScript, disconnects, then fails every record still not reported ("may or may not
   * have been written"), so each callback runs once. A second call waits for the first.
   */
  close(): Promise<void> {
    this.closing ??= this.closeOnce();
    return this.closing;
  }

  private async closeOnce(): Promise<void> {
    this.closed = true;
    if (this.watchTimer !== undefined) clearTimeout(this.watchTimer);
    this.watchTimer = undefined;
    const flushed = await untilCalledBack((cb) => this.producer.flush(FLUSH_AT_CLOSE_MS, cb));
    // librdkafka's flush has served the delivery reports, but the binding hands them to
    // JavaScript over later turns of the event loop; a disconnect now would drop them, and
    // records written would be failed as unknown.
    if (flushed === undefined && this.outstanding > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.flush(), new Promise<void>((resolve) => (timer = setTimeout(resolve, REPORTS_AFTER_FLUSH_MS)))]);
      clearTimeout(timer);
    }
    await disconnectRdkafka(this.producer);
    const left = [
      ...this.unreported.values(),
      ...this.backlog.slice(this.backlogHead).map((e) => (e as [OutgoingRecord, SendCallback])[1]),
    ];
    this.unreported.clear();
    this.backlog = [];
    this.backlogHead = 0;
    this.outstanding = 0;
    const error = new TributaryError(
      'SEND_FAILED',
      `The librdkafka producer was closed before ${left.length} record(s) were acknowledged; they may or may not have been written. Call flush() before close() to wait for them.`,
    );
    for (const onDone of left) onDone(error, undefined);
    for (const wake of this.idle.splice(0)) wake();
  }

  /** Hands one record to librdkafka; false when its queue is full. */
  private produce(record: OutgoingRecord, onDone: SendCallback): boolean {
    const id = this.nextId++;
    try {
      this.producer.produce(
        record.topic,
        record.partition ?? null,
        record.value,
        record.key,
        record.timestamp ?? null,
        id,
        record.headers ? Object.entries(record.headers).map(([k, v]) => ({ [k]: v })) : undefined,
      );
      this.unreported.set(id, onDone);
      return true;
    } catch (e) {
      if ((e as { code?: number }).code === QUEUE_FULL) return false;
      this.outstanding--;
      onDone(
        new TributaryError('SEND_FAILED', `librdkafka refused a record for topic '${record.topic}': ${(e as Error).message}`, {
          cause: e,
        }),
        undefined,
      );
      return true;
    }
  }

  private delivered(error: Error | null, report: RdkafkaDeliveryReport): void {
    const id = report.opaque as number;
    const onDone = this.unreported.get(id);
    // Already failed by close(): a report librdkafka delivers later changes nothing.
    if (onDone === undefined) return;
    this.unreported.delete(id);
    this.outstanding--;
    this.reports++;
    if (!error && this.stalled !== undefined) this.unstall();
    if (error) {
      onDone(
        new TributaryError(
          'SEND_FAILED',
          `librdkafka gave up on a record for topic '${report.topic}': ${error.message}. Check the broker and delivery.timeout.ms.`,
          { cause: error },
        ),
        undefined,
      );
    } else {
      onDone(undefined, {
        topic: report.topic,
        partition: report.partition,
        offset: Number(report.offset),
        timestamp: report.timestamp,
      });
    }
    while (this.backlogHead < this.backlog.length) {
      const [record, callback] = this.backlog[this.backlogHead] as [OutgoingRecord, SendCallback];
      if (!this.produce(record, callback)) break;
      this.backlog[this.backlogHead++] = undefined;
    }
    if (this.backlogHead === this.backlog.length) {
      this.backlog = [];
      this.backlogHead = 0;
    } else if (this.backlogHead > 1024 && this.backlogHead * 2 > this.backlog.length) {
      this.backlog = this.backlog.slice(this.backlogHead);
      this.backlogHead = 0;
    }
    if (this.outstanding === 0) {
      if (this.stalled !== undefined) this.unstall();
      for (const wake of this.idle.splice(0)) wake();
    }
  }

  private onClientError(error: RdkafkaError): void {
    this.lastError = `${error.isFatal ? 'fatal error: ' : ''}${error.message}`;
    if (this.outstanding > 0 && this.stalled === undefined) this.stall(Date.now());
  }

  private watch(): void {
    if (this.watchTimer !== undefined || this.closed) return;
    this.watchTimer = setTimeout(this.onWatch, WATCH_INTERVAL_MS);
    this.watchTimer.unref?.();
  }

  private readonly onWatch = (): void => {
    this.watchTimer = undefined;
    if (this.closed || this.outstanding === 0) return;
    const now = Date.now();
    if (this.reports !== this.reportsSeen) {
      this.reportsSeen = this.reports;
      this.lastProgress = now;
    }
    const stalled = this.stalled;
    if (stalled === undefined) {
      if (now - this.lastProgress >= this.stallAfterMs) this.stall(now);
    } else if (now - stalled.reportedAt >= STALL_REPORT_INTERVAL_MS) {
      stalled.reportedAt = now;
      this.report({ since: stalled.since, durationMs: now - stalled.since, reason: this.reason() });
    }
    this.watch();
  };

  private stall(now: number): void {
    this.stalled = { since: this.lastProgress, reportedAt: now };
    this.report({ since: this.lastProgress, durationMs: now - this.lastProgress, reason: this.reason() });
    this.watch();
  }

  private unstall(): void {
    this.stalled = undefined;
    this.lastError = undefined;
    this.report(undefined);
  }

  private reason(): string {
    return this.lastError ?? `no delivery report from librdkafka within request.timeout.ms=${this.stallAfterMs}`;
  }

  private report(stall: SenderStall | undefined): void {
    for (const listener of this.stallListeners) {
      try {
        listener(stall);
      } catch {
        // A listener's failure is not the sender's; the stall is reported to the others.
      }
    }
  }
}

/** librdkafka's settings for the resolved producer config. */
export function librdkafkaConfig(bootstrapServers: string, c: ResolvedProducerConfig): Record<string, string | number | boolean> {
  return {
    'bootstrap.servers': bootstrapServers,
    'client.id': c.clientId,
    dr_cb: true,
    acks: c.acks,
    'enable.idempotence': c.idempotent,
    // librdkafka keeps order with idempotence up to 5 requests in flight (its own sequence handling).
    'max.in.flight.requests.per.connection': c.idempotent ? Math.max(c.maxInFlight, 5) : c.maxInFlight,
    'linger.ms': c.lingerMs,
    'batch.size': c.batchSizeBytes,
    'batch.num.messages': Math.max(c.batchMaxRecords, 10_000),
    'compression.type': c.compression,
    'request.timeout.ms': c.requestTimeoutMs,
    // librdkafka's client-side request timeout (Java's request.timeout.ms); its own default of
    // 60 s would leave a request to a frozen broker unanswered that long before a retry.
    'socket.timeout.ms': c.requestTimeoutMs,
    // 0: no limit (librdkafka retries until the broker answers), when delivery.timeout.ms is unset.
    'message.timeout.ms': Number.isFinite(c.deliveryTimeoutMs) ? c.deliveryTimeoutMs : 0,
    // librdkafka's alias of message.send.max.retries (at most 2^31-1, its default).
    retries: Math.min(c.retries, 2_147_483_647),
    'retry.backoff.ms': c.retryBackoffMs,
    'retry.backoff.max.ms': c.retryBackoffMaxMs,
    'metadata.max.age.ms': c.metadataMaxAgeMs,
    'queue.buffering.max.messages': 200_000,
    // Java's and the kafkajs sender's placement of keyed records (librdkafka's default is CRC32):
    // switching sender= or moving from Kafka Connect keeps each key in its partition.
    partitioner: 'murmur2_random',
  };
}

export function loadRdkafka(baseDir: string): RdkafkaModule {
  try {
    return createRequire(join(baseDir, 'noop.js'))('@confluentinc/kafka-javascript') as RdkafkaModule;
  } catch (e) {
    throw new TributaryError(
      'CONFIG_INVALID',
      `sender=librdkafka needs the package @confluentinc/kafka-javascript, which could not be loaded (${(e as Error).message.split('\n')[0]}). Install it with: CKJS_LINKING=dynamic npm install @confluentinc/kafka-javascript`,
      { cause: e },
    );
  }
}

/**
 * Disconnects a producer of `@confluentinc/kafka-javascript` safely; never rejects.
 *
 * The poll interval is stopped first: the binding deletes the librdkafka handle on a thread-pool
 * thread under a lock its `poll()` does not take (`Producer::Poll` in its producer.cc), and it
 * clears the interval only once the disconnect is over, so a poll from the event loop in between
 * can run on a handle being destroyed: a SIGSEGV at stop. Delivery reports are no longer served
 * by then: the caller flushed and waited for them.
 */
export function disconnectRdkafka(producer: Pick<RdkafkaProducerLike, 'disconnect' | 'setPollInterval'>): Promise<void> {
  producer.setPollInterval(0);
  return untilCalledBack((cb) => producer.disconnect(cb)).then(() => undefined);
}

/**
 * Calls `start` with a callback and resolves, with the error it was called with if any, once it
 * is called; also when `start` throws (the binding throws "Producer not connected" from a client
 * that already disconnected itself).
 */
function untilCalledBack(start: (cb: (error?: Error | null) => void) => unknown): Promise<Error | undefined> {
  return new Promise<Error | undefined>((resolve) => {
    try {
      start((error) => resolve(error ?? undefined));
    } catch (e) {
      resolve(e instanceof Error ? e : new Error(String(e)));
    }
  });
}

function brokerError(error: Error, servers: string): TributaryError {
  return new TributaryError('BROKER_UNAVAILABLE', `librdkafka could not connect to ${servers}: ${error.message}`, {
    cause: error,
  });
}
