import { defer, from, type Observable } from 'rxjs';

/** Options of a {@link BoundedBuffer}. */
export interface BoundedBufferOptions {
  /** Items held before the buffer asks the source to pause. */
  readonly capacity: number;
  /** The buffer asks the source to resume once it holds this many or fewer. Default: half the capacity. */
  readonly resumeAt?: number;
  /** Called once when the buffer becomes full: stop reading from the source. */
  readonly onPause?: () => void;
  /** Called once when a paused buffer has drained to `resumeAt`: read again. */
  readonly onResume?: () => void;
}

/**
 * A buffer between a push source (a replication stream, a socket) and `poll()`.
 *
 * The source `push`es events; `poll()` returns `buffer.drainObservable(max)`. When the buffer
 * reaches its capacity it calls `onPause` (and `push` returns false); when `poll()` has
 * drained it to `resumeAt` it calls `onResume`. Items pushed while full are still kept:
 * nothing is ever dropped, the source is just asked to stop.
 *
 * @example
 * ```ts
 * import type { Readable } from 'node:stream';
 * import { map } from 'rxjs';
 * import type { SourceRecord } from 'tributary-connect';
 *
 * type Change = { lsn: string; row: unknown };
 * declare const stream: Readable; // e.g. a replication stream
 * declare function toRecord(change: Change): SourceRecord<{ slot: string }, { lsn: string }>;
 *
 * const buffer = new BoundedBuffer<Change>({
 *   capacity: 10_000,
 *   onPause: () => stream.pause(),
 *   onResume: () => stream.resume(),
 * });
 * stream.on('data', (change: Change) => buffer.push(change));
 * // What poll() returns:
 * const records = buffer.drainObservable(1000).pipe(map(toRecord));
 * ```
 */
export class BoundedBuffer<T> {
  private items: T[] = [];
  private head = 0;
  private paused = false;
  private failure: { error: unknown } | undefined;
  private readonly waiters: Array<() => void> = [];
  private readonly capacity: number;
  private readonly resumeAt: number;

  constructor(private readonly options: BoundedBufferOptions) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1) {
      throw new RangeError(`BoundedBuffer capacity must be an integer >= 1, got ${options.capacity}`);
    }
    this.capacity = options.capacity;
    this.resumeAt = options.resumeAt ?? Math.floor(options.capacity / 2);
    if (!Number.isInteger(this.resumeAt) || this.resumeAt < 0 || this.resumeAt >= this.capacity) {
      throw new RangeError(
        `BoundedBuffer resumeAt must be an integer >= 0 and < capacity (${this.capacity}), got ${this.resumeAt}`,
      );
    }
  }

  /** Items waiting to be drained. */
  get size(): number {
    return this.items.length - this.head;
  }

  /** True from the moment the buffer filled up until it drained to `resumeAt`. */
  get isPaused(): boolean {
    return this.paused;
  }

  /** Adds an item. Returns false when the buffer is full and the source should pause. */
  push(item: T): boolean {
    this.items.push(item);
    if (!this.paused && this.size >= this.capacity) {
      this.paused = true;
      this.options.onPause?.();
    }
    this.wake();
    return !this.paused;
  }

  /**
   * Records an error of the source; the next drain throws it after the items pushed
   * before it, so the task fails with the source's error and loses nothing before it.
   */
  fail(error: unknown): void {
    this.failure = { error };
    this.wake();
  }

  /** Takes up to `max` items in push order. Throws the source's error once everything before it is drained. */
  drain(max = Number.POSITIVE_INFINITY): T[] {
    // NaN would stall the buffer for good, a negative count take items twice.
    if (!(max === Number.POSITIVE_INFINITY || (Number.isInteger(max) && max >= 0))) {
      throw new RangeError(`BoundedBuffer.drain(max): max must be an integer >= 0 or left out, got ${max}`);
    }
    const end = Math.min(this.items.length, this.head + max);
    const out = this.items.slice(this.head, end);
    this.head = end;
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    if (this.paused && this.size <= this.resumeAt) {
      this.paused = false;
      this.options.onResume?.();
    }
    if (out.length === 0 && this.failure) throw this.failure.error;
    return out;
  }

  /** An Observable of up to `max` drained items, taken when subscribed: what `poll()` returns. */
  drainObservable(max?: number): Observable<T> {
    return defer(() => from(this.drain(max)));
  }

  /** Resolves when the buffer holds at least one item or has failed. */
  whenNotEmpty(): Promise<void> {
    if (this.size > 0 || this.failure) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}
