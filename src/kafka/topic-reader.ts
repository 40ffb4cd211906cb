import { randomUUID } from 'node:crypto';
import type { Admin, Consumer, ConsumerEndBatchProcessEvent, IHeaders, Kafka } from 'kafkajs';
import { TributaryError } from '../api/errors.js';

/** One record as read from a topic, bytes untouched. */
export interface TopicRecord {
  readonly topic: string;
  readonly partition: number;
  /** Kafka offset, as a decimal string (64-bit). */
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  /** Header values as sent; a key sent more than once keeps its last value. */
  readonly headers: Readonly<Record<string, Buffer>>;
  /** Record timestamp, milliseconds since the epoch. */
  readonly timestamp: number;
}

/** Options of {@link TopicReader}. */
export interface TopicReaderOptions {
  readonly kafka: Kafka;
  readonly topic: string;
  /** Called for every record, in offset order within each partition. Must not throw. */
  readonly onRecord: (record: TopicRecord) => void;
  /** Prefix of the throwaway consumer group id; a random suffix makes it unique. */
  readonly groupIdPrefix?: string;
}

/**
 * Follows a whole topic from its beginning and can tell when it has read up to the end.
 *
 * kafkajs has no group-less consumer (no `assign()`), so this is a kafkajs consumer in a
 * throwaway group of its own (unique id, no offset commits) subscribed `fromBeginning`. It stays
 * running: {@link readToEnd} fetches the end offsets at call time and waits until every
 * partition has been consumed up to them, which after the first catch-up only costs one
 * ListOffsets round trip. Positions are taken from kafkajs's end-of-batch events, which also
 * cover batches that hold only transaction markers or aborted records, so a topic shared with
 * transactional (EOS) writers cannot stall it. It reads read_committed: the records of aborted
 * transactions are dropped by kafkajs's filter as src/kafka/kafkajs-fixes.ts replaces it (as
 * Kafka's Java consumer does; kafkajs's own takes records for committed when aborted
 * transactions of two producers overlap), and the positions, from the end-of-batch events, count
 * the records the filter dropped as read.
 *
 * Costs of the group: joining waits the broker's `group.initial.rebalance.delay.ms` (3 s on a
 * stock broker) once at start; the principal needs Read on the group; an empty group with no
 * committed offsets is left behind until the broker expires it. If the group is ever rejoined
 * (e.g. after a coordinator move) the consumer replays the topic from the beginning, so the
 * callback sees records again; readers that keep "latest value per key" are unaffected once
 * {@link readToEnd} returns.
 */
export class TopicReader {
  readonly topic: string;
  private readonly kafka: Kafka;
  private readonly onRecord: (record: TopicRecord) => void;
  private readonly groupId: string;
  private consumer: Consumer | undefined;
  private admin: Admin | undefined;
  /** Next offset to read, per partition. */
  private readonly positions = new Map<number, bigint>();
  private readonly waiters = new Set<() => void>();
  private failure: Error | undefined;

  constructor(opts: TopicReaderOptions) {
    this.kafka = opts.kafka;
    this.topic = opts.topic;
    this.onRecord = opts.onRecord;
    this.groupId = `${opts.groupIdPrefix ?? 'tributary-reader'}-${randomUUID()}`;
  }

  /** Connects and starts consuming from the beginning; does not wait to catch up (see {@link readToEnd}). */
  async start(): Promise<void> {
    if (this.consumer !== undefined) return;
    const admin = this.kafka.admin();
    const consumer = this.kafka.consumer({
      groupId: this.groupId,
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: 500,
      sessionTimeout: 30_000,
      rebalanceTimeout: 30_000,
    });
    this.admin = admin;
    this.consumer = consumer;
    this.failure = undefined;
    consumer.on(consumer.events.END_BATCH_PROCESS, (event: ConsumerEndBatchProcessEvent) => {
      const { topic, partition, lastOffset } = event.payload;
      if (topic !== this.topic) return;
      this.positions.set(partition, BigInt(lastOffset) + 1n);
      this.wake();
    });
    consumer.on(consumer.events.CRASH, (event) => {
      if (!event.payload.restart) {
        this.failure = event.payload.error;
        this.wake();
      }
    });
    try {
      await admin.connect();
      await consumer.connect();
      await consumer.subscribe({ topics: [this.topic], fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          for (const message of batch.messages) {
            this.onRecord({
              topic: batch.topic,
              partition: batch.partition,
              offset: message.offset,
              key: message.key ?? null,
              value: message.value ?? null,
              headers: normalizeHeaders(message.headers),
              timestamp: Number(message.timestamp),
            });
          }
        },
      });
    } catch (e) {
      await this.stop();
      throw e;
    }
  }

  /**
   * Resolves once every partition has been read up to the end offsets (last stable offsets)
   * fetched when this is called. Rejects with `BROKER_UNAVAILABLE` after `timeoutMs`.
   */
  async readToEnd(timeoutMs = 60_000): Promise<void> {
    if (this.admin === undefined) throw new Error(`TopicReader(${this.topic}) is not started`);
    const deadline = Date.now() + timeoutMs;
    const ends = await this.endOffsets(deadline, timeoutMs);
    const targets = ends
      .map((e) => ({ partition: e.partition, high: BigInt(e.high), low: BigInt(e.low) }))
      .filter((e) => e.high > e.low);
    const caughtUp = (): boolean => targets.every((t) => (this.positions.get(t.partition) ?? -1n) >= t.high);
    while (!caughtUp()) {
      if (this.failure !== undefined) {
        throw new TributaryError('BROKER_UNAVAILABLE', `Reading topic '${this.topic}' failed: ${this.failure.message}`, {
          cause: this.failure,
        });
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        const behind = targets
          .filter((t) => (this.positions.get(t.partition) ?? -1n) < t.high)
          .map((t) => `partition ${t.partition} at ${this.positions.get(t.partition) ?? 'start'} of ${t.high}`);
        throw this.timeoutError(timeoutMs, `catching up (${behind.join(', ')})`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(left, 1000));
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.waiters.add(done);
      });
    }
  }

  /**
   * The end offsets of every partition. kafkajs's admin gives up at once on a stale leader
   * (e.g. just after the topic was created, or after a leader moved) and does not refresh its
   * metadata then, so a retriable failure gets a fresh admin client and another try.
   */
  private async endOffsets(
    deadline: number,
    timeoutMs: number,
  ): Promise<Array<{ partition: number; high: string; low: string }>> {
    for (let attempt = 0; ; attempt++) {
      const admin = this.admin;
      if (admin === undefined) throw new Error(`TopicReader(${this.topic}) is stopped`);
      const left = deadline - Date.now();
      try {
        return await withTimeout(admin.fetchTopicOffsets(this.topic), Math.max(left, 1), () =>
          this.timeoutError(timeoutMs, 'fetching the end offsets'),
        );
      } catch (e) {
        const retriable = (e as { retriable?: unknown }).retriable === true;
        if (!retriable || deadline - Date.now() < 200) {
          if (e instanceof TributaryError) throw e;
          throw new TributaryError(
            'BROKER_UNAVAILABLE',
            `Could not fetch the end offsets of topic '${this.topic}': ${e instanceof Error ? e.message : String(e)}`,
            { cause: e },
          );
        }
        if (this.admin !== admin) throw new Error(`TopicReader(${this.topic}) is stopped`);
        const fresh = this.kafka.admin();
        this.admin = fresh;
        await admin.disconnect().catch(() => {});
        await new Promise((r) => setTimeout(r, Math.min(100 * 2 ** attempt, 1000)));
        await fresh.connect().catch(() => {});
      }
    }
  }

  /** Stops consuming and disconnects. The reader can be started again (it then reads from the beginning). */
  async stop(): Promise<void> {
    const consumer = this.consumer;
    const admin = this.admin;
    this.consumer = undefined;
    this.admin = undefined;
    this.positions.clear();
    this.wake();
    await Promise.allSettled([consumer?.disconnect(), admin?.disconnect()]);
  }

  private wake(): void {
    const waiters = [...this.waiters];
    this.waiters.clear();
    for (const w of waiters) w();
  }

  private timeoutError(timeoutMs: number, what: string): TributaryError {
    return new TributaryError(
      'BROKER_UNAVAILABLE',
      `Timed out after ${timeoutMs} ms reading topic '${this.topic}' to its end: ${what}`,
    );
  }
}

function normalizeHeaders(headers: IHeaders | undefined): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  if (headers === undefined) return out;
  for (const [k, v] of Object.entries(headers)) {
    const last = Array.isArray(v) ? v[v.length - 1] : v;
    if (last === undefined) continue;
    out[k] = Buffer.isBuffer(last) ? last : Buffer.from(last);
  }
  return out;
}

function withTimeout<T>(promise: Promise<T>, ms: number, error: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(error()), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
