import type { Clock } from '../api/clock.js';
import type { OutgoingRecord, RecordMetadata, RecordSender, SendCallback, SenderStall } from '../runtime/ports.js';

/** Decides, per record, whether the mock sender acknowledges it, fails it or holds it back. */
export type RecordPredicate = (record: OutgoingRecord) => boolean;

interface Held {
  readonly record: OutgoingRecord;
  readonly onDone: SendCallback;
  readonly generation: number;
}

/**
 * A {@link RecordSender} for tests: acknowledges each record after `ackDelayMs` of the clock's
 * time (0: on the next microtask), unless a rule fails it or holds it back.
 */
export class MockSender implements RecordSender {
  private readonly offsets = new Map<string, number>();
  private failRules: Array<{ predicate: RecordPredicate; error: () => Error }> = [];
  private holdRules: RecordPredicate[] = [];
  private held: Held[] = [];
  private outstanding = 0;
  private idle: Array<() => void> = [];
  /** Bumped by {@link dropAll}: callbacks of an earlier generation are never called. */
  private generation = 0;
  /** Every record handed to `send`, in order. */
  readonly sent: OutgoingRecord[] = [];

  constructor(
    private readonly clock: Clock,
    public ackDelayMs = 0,
  ) {}

  send(record: OutgoingRecord, onDone: SendCallback): void {
    this.sent.push(record);
    this.outstanding++;
    const generation = this.generation;
    const rule = this.failRules.find((r) => r.predicate(record));
    if (rule) {
      const error = rule.error();
      queueMicrotask(() => this.complete(generation, onDone, error, undefined));
      return;
    }
    if (this.holdRules.some((p) => p(record))) {
      this.held.push({ record, onDone, generation });
      return;
    }
    this.ackLater({ record, onDone, generation });
  }

  async flush(): Promise<void> {
    if (this.outstanding === 0) return;
    await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  async close(): Promise<void> {}

  private stallListeners: Array<(stall: SenderStall | undefined) => void> = [];

  onStall(listener: (stall: SenderStall | undefined) => void): void {
    this.stallListeners.push(listener);
  }

  /**
   * Reports, as a Kafka sender does, that Kafka has not acknowledged records (a stall) or,
   * with `undefined`, that it does again: the task's status shows it, and heartbeat ticks are
   * skipped meanwhile.
   *
   * @example
   * ```ts
   * import { systemClock } from 'tributary-connect';
   *
   * const sender = new MockSender(systemClock);
   * sender.reportStall({ since: Date.now(), durationMs: 30_000, reason: 'broker away' });
   * sender.reportStall(undefined);
   * ```
   */
  reportStall(stall: SenderStall | undefined): void {
    for (const listener of this.stallListeners) listener(stall);
  }

  /** Fails every later record that matches, as a sender that gave up would. */
  failWhere(predicate: RecordPredicate, error: () => Error = () => new Error('mock send failure')): void {
    this.failRules.push({ predicate, error });
  }

  /** Holds back the acknowledgement of every later record that matches, until {@link release}. */
  holdWhere(predicate: RecordPredicate): void {
    this.holdRules.push(predicate);
  }

  /** Acknowledges the held records that match (all by default), in the given order. Hold rules stay until {@link clearRules}. */
  release(predicate: RecordPredicate = () => true, order: 'fifo' | 'lifo' = 'fifo'): number {
    const matching = this.held.filter((h) => predicate(h.record));
    this.held = this.held.filter((h) => !predicate(h.record));
    for (const h of order === 'fifo' ? matching : matching.reverse()) this.ackLater(h);
    return matching.length;
  }

  /** Removes every fail and hold rule. */
  clearRules(): void {
    this.failRules = [];
    this.holdRules = [];
  }

  /** Records held back now. */
  get heldCount(): number {
    return this.held.length;
  }

  /** Forgets every record not yet called back, as a process crash would. */
  dropAll(): void {
    this.generation++;
    this.held = [];
    this.outstanding = 0;
    this.wakeIdle();
  }

  private ackLater(h: Held): void {
    const metadata = this.metadataFor(h.record);
    const done = () => this.complete(h.generation, h.onDone, undefined, metadata);
    if (this.ackDelayMs > 0) this.clock.scheduler.schedule(done, this.ackDelayMs);
    else queueMicrotask(done);
  }

  private metadataFor(record: OutgoingRecord): RecordMetadata {
    const partition = record.partition ?? 0;
    const key = `${record.topic}:${partition}`;
    const offset = this.offsets.get(key) ?? 0;
    this.offsets.set(key, offset + 1);
    return { topic: record.topic, partition, offset, timestamp: record.timestamp ?? this.clock.now() };
  }

  private complete(
    generation: number,
    onDone: SendCallback,
    error: Error | undefined,
    metadata: RecordMetadata | undefined,
  ): void {
    if (generation !== this.generation) return;
    this.outstanding--;
    onDone(error, metadata);
    if (this.outstanding === 0) this.wakeIdle();
  }

  private wakeIdle(): void {
    for (const w of this.idle.splice(0)) w();
  }
}
