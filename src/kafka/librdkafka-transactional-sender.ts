import { TributaryError } from '../api/errors.js';
import type { OffsetEntry, OutgoingRecord, RecordMetadata, SendCallback, TransactionalRecordSender } from '../runtime/ports.js';
import { HeldTransactions, isRecordInvalid } from './held-transactions.js';
import type { OffsetMessage } from './kafkajs-transactional-sender.js';
import { disconnectRdkafka, librdkafkaConfig, loadRdkafka, type RdkafkaDeliveryReport } from './librdkafka-sender.js';
import type { ResolvedProducerConfig } from './producer-config.js';

/** The transactional part of `@confluentinc/kafka-javascript`'s librdkafka `Producer`. */
interface RdkafkaTransactionalProducer {
  connect(options: object, cb: (error: Error | null) => void): unknown;
  disconnect(cb: (error?: Error | null) => void): unknown;
  produce(
    topic: string,
    partition: number | null,
    value: Buffer | null,
    key: Buffer | string | null,
    timestamp: number | null,
    opaque: unknown,
    headers: Array<Record<string, string | Buffer>> | undefined,
  ): unknown;
  setPollInterval(ms: number): unknown;
  on(event: 'delivery-report', listener: (error: Error | null, report: RdkafkaDeliveryReport) => void): unknown;
  initTransactions(timeout: number, cb: (error: Error | null) => void): void;
  beginTransaction(cb: (error: Error | null) => void): void;
  commitTransaction(timeout: number, cb: (error: Error | null) => void): void;
  abortTransaction(timeout: number, cb: (error: Error | null) => void): void;
}

/** Options of {@link LibrdkafkaTransactionalSender.connect}. */
export interface LibrdkafkaTransactionalOptions {
  readonly transactionalId: string;
  readonly offsetsTopic: string;
  readonly offsetMessages: (connector: string, entries: readonly OffsetEntry[]) => OffsetMessage[];
  /** librdkafka's `transaction.timeout.ms`; default 60 000. */
  readonly transactionTimeoutMs?: number;
  /** Where `@confluentinc/kafka-javascript` is resolved from; default the working directory. */
  readonly baseDir?: string;
}

/** librdkafka error codes that mean a newer producer of the transactional id took over. */
const FENCED_CODES = new Set([90 /* PRODUCER_FENCED */, 47 /* INVALID_PRODUCER_EPOCH */, -144 /* _FENCED */]);
const QUEUE_FULL = -184;
/** RD_KAFKA_RESP_ERR__FATAL: what produce() throws once the producer has raised a fatal error. */
const FATAL = -150;

interface Pending {
  readonly record: OutgoingRecord;
  readonly callback: SendCallback;
}

/**
 * The librdkafka sender for `exactly.once.source.support=enabled` (KIP-618), through
 * `@confluentinc/kafka-javascript`: `transactional.id`, idempotence and acks=all; each
 * transaction is `beginTransaction`, the records, the offset records into the offsets topic,
 * `commitTransaction` (which waits for every delivery). `initTransactions` at connect fences the
 * task's earlier producers. After any failure the producer is not used again (the task fails;
 * its restart makes a fresh one that fences this one).
 */
export class LibrdkafkaTransactionalSender extends HeldTransactions<Pending> implements TransactionalRecordSender {
  readonly transactional = true as const;
  /** The reports of the transaction being written; reports of any other (ended) one are ignored. */
  private current: TransactionReports | undefined;
  private nextId = 0;

  private constructor(
    private readonly producer: RdkafkaTransactionalProducer,
    private readonly options: LibrdkafkaTransactionalOptions,
    private readonly timeoutMs: number,
  ) {
    super();
    producer.on('delivery-report', (error, report) => {
      const current = this.current;
      // An offset record (opaque -1), or a late report of a transaction that ended (aborted, or
      // given up on): nothing waits for it, and keeping it would grow without bound.
      if (current === undefined) return;
      const i = (report.opaque as number) - current.first;
      if (!(i >= 0 && i < current.reports.length) || current.reports[i] !== undefined) return;
      current.reports[i] = error ?? {
        topic: report.topic,
        partition: report.partition,
        offset: Number(report.offset),
        timestamp: report.timestamp,
      };
      if (--current.missing === 0) current.wake?.();
    });
  }

  /** Loads the client, connects and fences (initTransactions). */
  static async connect(
    bootstrapServers: string,
    config: ResolvedProducerConfig,
    security: Readonly<Record<string, unknown>>,
    options: LibrdkafkaTransactionalOptions,
  ): Promise<LibrdkafkaTransactionalSender> {
    const rd = loadRdkafka(options.baseDir ?? process.cwd());
    const timeout = options.transactionTimeoutMs ?? 60_000;
    const producer = new rd.Producer({
      ...librdkafkaConfig(bootstrapServers, config),
      ...security,
      'transactional.id': options.transactionalId,
      'transaction.timeout.ms': timeout,
      'enable.idempotence': true,
      acks: 'all',
      'max.in.flight.requests.per.connection': 5,
      // librdkafka requires message.timeout.ms <= transaction.timeout.ms with transactions.
      'message.timeout.ms': timeout,
    }) as unknown as RdkafkaTransactionalProducer;
    await new Promise<void>((resolve, reject) => producer.connect({}, (e) => (e ? reject(e) : resolve())));
    producer.setPollInterval(5);
    const sender = new LibrdkafkaTransactionalSender(producer, options, timeout);
    try {
      await new Promise<void>((resolve, reject) => producer.initTransactions(timeout, (e) => (e ? reject(e) : resolve())));
    } catch (e) {
      // Not used again: each restart attempt would otherwise leave a connected client (and its threads) behind.
      await sender.disconnect();
      throw new TributaryError(
        'TRANSACTION_FAILED',
        `The transactional producer with transactional id '${options.transactionalId}' could not be initialised (initTransactions, which fences the task's earlier producers): ${e instanceof Error ? e.message : String(e)}`,
        { cause: e },
      );
    }
    return sender;
  }

  send(record: OutgoingRecord, onDone: SendCallback): void {
    if (this.refused(record, onDone)) return;
    this.open.push({ record, callback: onDone });
  }

  protected disconnect(): Promise<void> {
    return disconnectRdkafka(this.producer);
  }

  private call(fn: (cb: (e: Error | null) => void) => void): Promise<void> {
    return new Promise((resolve, reject) => fn((e) => (e ? reject(e) : resolve())));
  }

  private async produce(
    topic: string,
    partition: number | null,
    value: Buffer | string | null,
    key: Buffer | string | null,
    timestamp: number | null,
    id: number,
    headers: OutgoingRecord['headers'],
  ): Promise<void> {
    for (;;) {
      try {
        this.producer.produce(
          topic,
          partition,
          typeof value === 'string' ? Buffer.from(value) : value,
          key,
          timestamp,
          id,
          headers ? Object.entries(headers).map(([k, v]) => ({ [k]: v })) : undefined,
        );
        return;
      } catch (e) {
        if ((e as { code?: number }).code !== QUEUE_FULL) throw e;
        await new Promise((r) => setTimeout(r, 5));
      }
    }
  }

  protected async runTransaction(
    connector: string,
    records: Pending[],
    offsets: readonly OffsetEntry[] | PromiseLike<readonly OffsetEntry[]>,
  ): Promise<void> {
    let begun = false;
    let current: TransactionReports | undefined;
    try {
      if (this.broken !== undefined) throw this.broken;
      const offsetMessages = this.options.offsetMessages(connector, await offsets);
      if (records.length === 0 && offsetMessages.length === 0) return;
      await this.call((cb) => this.producer.beginTransaction(cb));
      begun = true;
      current = {
        first: this.nextId,
        reports: new Array<RecordMetadata | Error | undefined>(records.length).fill(undefined),
        missing: records.length,
        wake: undefined,
      };
      this.current = current;
      for (const { record } of records) {
        const id = this.nextId++;
        await this.produce(
          record.topic,
          record.partition ?? null,
          record.value,
          record.key,
          record.timestamp ?? Date.now(),
          id,
          record.headers,
        );
      }
      for (const m of offsetMessages)
        await this.produce(m.topic ?? this.options.offsetsTopic, null, m.value, m.key, null, -1, undefined);
      await this.call((cb) => this.producer.commitTransaction(this.timeoutMs, cb));
      // commitTransaction flushes, so librdkafka has every record's delivery report, but the
      // binding hands them to JavaScript on later turns of the event loop (100 at a time): wait.
      await reportsIn(current, this.timeoutMs);
      this.current = undefined;
    } catch (e) {
      this.current = undefined;
      let cause = e;
      if (begun) {
        const abortError = await this.call((cb) => this.producer.abortTransaction(this.timeoutMs, cb)).then(
          () => undefined,
          (a: unknown) => a,
        );
        // After a fatal error (a newer producer of this transactional id fenced this one, say)
        // produce() says only "Local: Fatal error"; the transaction calls answer with the error itself.
        if ((e as { code?: unknown } | null)?.code === FATAL && abortError !== undefined) cause = abortError;
      }
      // The task's own offsets were refused before anything was sent: its error, not "outcome unknown".
      const error =
        this.broken ?? (!begun && isRecordInvalid(e) ? e : transactionError(cause, this.options.transactionalId, records.length));
      this.broken = error;
      for (const r of records) r.callback(error, undefined);
      throw error;
    }
    if (current === undefined) return;
    const reports = current.reports;
    this.acknowledge(records, (i) => {
      const m = reports[i];
      // Committed, so written; a report that never came (or, impossibly, an error) leaves where unknown.
      return m === undefined || m instanceof Error
        ? { topic: (records[i] as Pending).record.topic, partition: -1, offset: -1 }
        : m;
    });
  }
}

/** The delivery reports of one transaction's records, by id − `first`. */
interface TransactionReports {
  readonly first: number;
  readonly reports: Array<RecordMetadata | Error | undefined>;
  missing: number;
  wake: (() => void) | undefined;
}

/** Resolves once every record of the transaction has its report, or after `timeoutMs`. */
function reportsIn(current: TransactionReports, timeoutMs: number): Promise<void> {
  if (current.missing === 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    current.wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

function transactionError(e: unknown, transactionalId: string, records: number): TributaryError {
  const code = (e as { code?: unknown } | null)?.code;
  const detail = e instanceof Error ? e.message : String(e);
  if ((typeof code === 'number' && FENCED_CODES.has(code)) || /fenced/i.test(detail)) {
    return new TributaryError(
      'TRANSACTION_FENCED',
      `The producer with transactional id '${transactionalId}' was fenced: a newer producer of this task started (the task runs elsewhere, or was restarted), so this one writes nothing more; its open transaction of ${records} record(s) is aborted (${detail})`,
      { cause: e },
    );
  }
  return new TributaryError(
    'TRANSACTION_FAILED',
    `The transaction of ${records} record(s) and their offsets (transactional id '${transactionalId}') was not confirmed as committed: it failed, or its outcome is unknown (the broker may yet commit it, or abort it when this producer is fenced or times out). Its records and offsets commit together or not at all, so a restarted task resumes from the offsets Kafka holds either way: ${detail}`,
    { cause: e },
  );
}
