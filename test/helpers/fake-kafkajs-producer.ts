import type { Message, PartitionMetadata, ProducerBatch, ProducerConfig, RecordMetadata } from 'kafkajs';
import type { KafkajsLike, KafkajsProducerLike } from '../../src/kafka/kafkajs-sender.js';

/**
 * A hand-written stand-in for a kafkajs producer, for unit tests of `KafkajsSender` only
 * (integration tests use a real broker). Like kafkajs it runs the configured partitioner over
 * each message (partition metadata: `partitions` per topic, all with a leader); unlike kafkajs,
 * each `sendBatch` call waits until the test settles it with {@link succeed} or {@link fail},
 * unless `autoAck` is on.
 */
export class FakeKafkajsProducer implements KafkajsProducerLike {
  /** The config `kafka.producer(config)` was called with. */
  config: ProducerConfig | undefined;
  /** Every `sendBatch` call in call order; settled ones stay with `settled: true`. */
  readonly calls: FakeCall[] = [];
  /** What was written, per `topic:partition`, in write order (duplicates included). */
  readonly log = new Map<string, Message[]>();
  /** Settle every call with success on the next microtask. */
  autoAck = false;
  /** Partition count of every topic. */
  partitions = 3;
  connected = false;
  disconnects = 0;
  /** `kafka.producer()` calls: the sender makes a fresh producer after giving up on a sent batch. */
  producers = 0;
  /** Successful `connect()` calls; each stands for a new producer id. */
  connects = 0;
  /** Makes the next `connect()` calls reject with these errors, one each. */
  connectErrors: Error[] = [];
  /** While set, `connect()` waits for it before it settles (a connection under way). */
  connectGate: Promise<void> | undefined;
  private partition: ((args: { topic: string; partitionMetadata: PartitionMetadata[]; message: Message }) => number) | undefined;
  /**
   * Set: the fake behaves as the producer thread of src/kafka/kafkajs-thread.ts with one
   * request in flight. Calls are written one after another, oldest first (settle only
   * `open()[0]`); after a failure or a response without some partition (#1303) every other open
   * call, and every call made before all were answered, is rejected "not attempted".
   */
  queueDepth: number | undefined;
  private halted = false;

  /** A `Kafka` look-alike whose `producer()` returns this fake. */
  kafka(): KafkajsLike {
    return {
      producer: (config: ProducerConfig) => {
        this.config = config;
        this.producers++;
        // A fresh producer (thread) takes calls again.
        this.halted = false;
        this.partition = config.createPartitioner?.();
        return this;
      },
    };
  }

  async connect(): Promise<void> {
    if (this.connectGate !== undefined) await this.connectGate;
    const error = this.connectErrors.shift();
    if (error !== undefined) throw error;
    this.connected = true;
    this.connects++;
  }

  async disconnect(): Promise<void> {
    this.connected = false;
    this.disconnects++;
  }

  sendBatch(batch: ProducerBatch): Promise<RecordMetadata[]> {
    const partitionMetadata: PartitionMetadata[] = Array.from({ length: this.partitions }, (_, i) => ({
      partitionId: i,
      leader: 0,
      partitionErrorCode: 0,
      replicas: [0],
      isr: [0],
    }));
    // Partition now, as kafkajs does inside sendBatch (and again on each of its retries).
    for (const { topic, messages } of batch.topicMessages ?? []) {
      for (const message of messages) {
        if (this.partition !== undefined) this.partition({ topic, partitionMetadata, message });
      }
    }
    if (this.queueDepth !== undefined && this.halted && this.open().length === 0) this.halted = false;
    return new Promise((resolve, reject) => {
      const call: FakeCall = { batch, settled: false, resolve, reject, connection: this.connects };
      this.calls.push(call);
      if (this.queueDepth !== undefined && this.halted) {
        queueMicrotask(() => this.notAttempted(call));
        return;
      }
      if (this.autoAck) queueMicrotask(() => this.succeed(call));
    });
  }

  /** Queue mode: a call the producer did not send, because an earlier one failed. */
  private notAttempted(call: FakeCall): void {
    if (call.settled) return;
    call.settled = true;
    call.reject(Object.assign(new Error('not sent: an earlier batch failed first'), { notAttempted: true }));
  }

  /** Queue mode: after `call` failed or lacked a partition, the calls behind it are not sent. */
  private halt(call: FakeCall): void {
    if (this.queueDepth === undefined) return;
    if (this.open()[0] !== undefined && this.open()[0] !== call) throw new Error('queue mode: settle the oldest call first');
    this.halted = true;
    for (const other of this.open()) if (other !== call) queueMicrotask(() => this.notAttempted(other));
  }

  /** Calls not settled yet, oldest first. */
  open(): FakeCall[] {
    return this.calls.filter((c) => !c.settled);
  }

  /**
   * Writes the call's messages to the log and resolves it with kafkajs-shaped metadata.
   * Partitions in `skip` are neither written nor in the response, yet the call succeeds, as
   * kafkajs does when a partition moved to a broker that had already answered (#1303).
   */
  succeed(call: FakeCall | undefined = this.open()[0], skip: readonly number[] = []): void {
    if (call === undefined) throw new Error('no open sendBatch call');
    if (call.settled) return;
    if (this.queueDepth !== undefined && this.open()[0] !== call) throw new Error('queue mode: settle the oldest call first');
    if (skip.length > 0) this.halt(call);
    call.settled = true;
    const response: RecordMetadata[] = [];
    for (const { topic, messages } of call.batch.topicMessages ?? []) {
      const perPartition = new Map<number, Message[]>();
      for (const m of messages) {
        const p = m.partition ?? 0;
        if (skip.includes(p)) continue;
        const list = perPartition.get(p) ?? [];
        list.push(m);
        perPartition.set(p, list);
      }
      for (const [partition, list] of perPartition) {
        const logKey = `${topic}:${partition}`;
        const written = this.log.get(logKey) ?? [];
        const baseOffset = written.length;
        written.push(...list);
        this.log.set(logKey, written);
        response.push({
          topicName: topic,
          partition,
          errorCode: 0,
          baseOffset: String(baseOffset),
          logAppendTime: '-1',
          logStartOffset: '0',
        });
      }
    }
    call.resolve(response);
  }

  /** Rejects the call with `error`; with `written`, the records were written before the failure (lost response). */
  fail(error: Error, call: FakeCall | undefined = this.open()[0], written = false): void {
    if (call === undefined) throw new Error('no open sendBatch call');
    if (call.settled) return;
    this.halt(call);
    if (written) {
      // Record the write, then report failure.
      const resolve = call.resolve;
      call.resolve = () => {};
      this.succeed(call);
      call.resolve = resolve;
    }
    call.settled = true;
    call.reject(error);
  }

  /** Values written to `topic:partition`, as strings. */
  values(topic: string, partition: number): string[] {
    return (this.log.get(`${topic}:${partition}`) ?? []).map((m) => String(m.value));
  }

  /** Partitions of a call's messages, ascending. */
  static partitionsOf(call: FakeCall): number[] {
    const ps = new Set<number>();
    for (const t of call.batch.topicMessages ?? []) for (const m of t.messages) ps.add(m.partition ?? 0);
    return [...ps].sort((a, b) => a - b);
  }

  /** Number of messages in a call. */
  static size(call: FakeCall): number {
    return (call.batch.topicMessages ?? []).reduce((n, t) => n + t.messages.length, 0);
  }
}

/** One `sendBatch` call held by the fake. */
export interface FakeCall {
  readonly batch: ProducerBatch;
  /** {@link FakeKafkajsProducer.connects} when the call was made: which producer id sent it. */
  readonly connection: number;
  settled: boolean;
  resolve: (metadata: RecordMetadata[]) => void;
  reject: (error: Error) => void;
}

/** An error shaped like kafkajs's, with a `name`, `retriable` and optional `cause` and `retryCount`. */
export function kafkajsError(
  name: string,
  message: string,
  options: { retriable?: boolean; cause?: Error; retryCount?: number; type?: string } = {},
): Error {
  const e = new Error(message, options.cause === undefined ? undefined : { cause: options.cause }) as Error & {
    retriable: boolean;
    retryCount?: number;
    type?: string;
  };
  e.name = name;
  e.retriable = options.retriable ?? true;
  if (options.retryCount !== undefined) e.retryCount = options.retryCount;
  if (options.type !== undefined) e.type = options.type;
  return e;
}

/** What kafkajs rejects with when its own retries run out on a broker it cannot reach. */
export function retriesExceeded(): Error {
  const cause = kafkajsError('KafkaJSConnectionError', 'Connection error: connect ECONNREFUSED 127.0.0.1:9092');
  return kafkajsError('KafkaJSNumberOfRetriesExceeded', cause.message, { retriable: false, cause, retryCount: 5 });
}

/** What kafkajs rejects with when the broker refuses a batch for good. */
export function messageTooLarge(): Error {
  const cause = kafkajsError(
    'KafkaJSProtocolError',
    'The request included a message larger than the max message size the server will accept',
    {
      retriable: false,
      type: 'MESSAGE_TOO_LARGE',
    },
  );
  return kafkajsError('KafkaJSNonRetriableError', cause.message, { retriable: false, cause });
}
