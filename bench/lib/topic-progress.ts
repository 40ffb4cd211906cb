/**
 * Watches how many records a topic holds (the sum of its partitions' end offsets, asked with
 * ListOffsets every `intervalMs`) and notes when the first record appeared and when all
 * `expected` records were there (`Infinity` for a run stopped after a fixed time). Times are `performance.now()` values of the poll that saw it,
 * so they are late by at most one interval (50 ms by default) plus a round trip.
 */
import type { Admin } from 'kafkajs';
import type { ProgressSample } from './steady.js';

/** What a {@link TopicProgress} saw. */
export interface TopicProgressResult {
  /** When the first record was seen, or undefined. */
  readonly firstAt: number | undefined;
  /** When `expected` records were seen, or undefined. */
  readonly allAt: number | undefined;
  /** Records in the topic at the last poll. */
  readonly records: number;
  /** Every poll that answered, in time order (for the steady-state window, bench/lib/steady.ts). */
  readonly samples: readonly ProgressSample[];
}

export class TopicProgress {
  private firstAt: number | undefined;
  private allAt: number | undefined;
  private records = 0;
  private readonly samples: ProgressSample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  private stopped = false;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly admin: Admin,
    private readonly topic: string,
    private readonly expected: number,
    private readonly intervalMs = 50,
  ) {}

  /** Records in the topic at the last poll. */
  get count(): number {
    return this.records;
  }

  /** When the first record was seen, or undefined. */
  get first(): number | undefined {
    return this.firstAt;
  }

  /** Starts polling. */
  start(): void {
    this.timer = setInterval(() => void this.poll(), this.intervalMs);
    void this.poll();
  }

  /** Resolves once every expected record is in the topic, or when `abort` settles first (then false). */
  async waitForAll(abort: Promise<unknown>): Promise<boolean> {
    if (this.allAt !== undefined) return true;
    let aborted = false;
    await Promise.race([
      new Promise<void>((r) => this.waiters.push(r)),
      abort.then(() => {
        aborted = true;
      }),
    ]);
    return !aborted || this.allAt !== undefined;
  }

  /** Polls once more (to count what a process that has exited left behind), stops and returns what was seen. */
  async finish(): Promise<TopicProgressResult> {
    this.stopped = true;
    clearInterval(this.timer);
    while (this.polling) await new Promise((r) => setTimeout(r, 10));
    await this.poll(true);
    return { firstAt: this.firstAt, allAt: this.allAt, records: this.records, samples: this.samples };
  }

  private async poll(force = false): Promise<void> {
    if (this.polling || (this.stopped && !force)) return;
    this.polling = true;
    try {
      const offsets = await this.admin.fetchTopicOffsets(this.topic);
      const now = performance.now();
      this.records = offsets.reduce((sum, p) => sum + Number(p.high), 0);
      this.samples.push({ at: now, records: this.records });
      if (this.records > 0 && this.firstAt === undefined) this.firstAt = now;
      if (this.records >= this.expected && this.allAt === undefined) {
        this.allAt = now;
        for (const w of this.waiters.splice(0)) w();
      }
    } catch {
      // A transient metadata error: the next poll asks again.
    } finally {
      this.polling = false;
    }
  }
}
