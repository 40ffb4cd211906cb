/**
 * The kafkajs sender's dispatch window: which batch goes out next, which are in flight, and in
 * what order they are settled. Pure: no kafkajs, no timers, no clock; the sender tells it what
 * happened (dispatched, answered, acknowledged, failed) and it keeps the order rules.
 */

/** Where a batch stands: filling, waiting for a slot, on the wire, answered, or called back. */
export type BatchState = 'open' | 'queued' | 'inflight' | 'acked' | 'failed' | 'done';

/** Per topic, the base offset the broker gave the batch in each partition (-1 = none). */
export type PartitionBases = ReadonlyMap<string, { readonly next: readonly number[] }>;

/** What the window keeps on a batch. */
export interface WindowBatch {
  state: BatchState;
  /** Dispatch number; an answer to an earlier dispatch is stale and ignored. */
  attempt: number;
  /** The window's acknowledgement count when the batch was last dispatched: batches acknowledged later overlapped it. */
  dispatchedAfter: number;
  /** Where the records landed, once acknowledged. */
  offsets: PartitionBases | undefined;
}

/** Options of {@link DispatchWindow}. */
export interface DispatchWindowOptions<B extends WindowBatch> {
  /**
   * Check acknowledged base offsets for a later batch written before an earlier one (with
   * several batches in flight, kafkajs does not keep concurrent calls in call order).
   */
  readonly checkOvertaking: boolean;
  /** A batch is settled (state `acked` or `failed`), in dispatch order: call its records back. */
  readonly onSettled: (batch: B) => void;
  /** `batch` was overtaken: it and every batch dispatched after it go back to the queue. */
  readonly onReordered: (batch: B) => void;
}

/**
 * Batches waiting for a slot (`ready`, oldest first) and batches dispatched but not yet settled
 * (the window, in dispatch order). Guarantees, whatever order answers come back in:
 *
 * - batches are settled (handed to `onSettled`) in dispatch order, each once;
 * - a batch sent again goes back to the front of the queue together with every batch
 *   dispatched after it, in order, and nothing is dispatched until every call still out has
 *   been answered (re-sending it alone could let a later one overtake it);
 * - with `checkOvertaking`, an acknowledged batch whose base offset in some partition is not
 *   above that of a batch acknowledged while it was in flight is not settled but sent again,
 *   with the batches after it, so acknowledged copies follow dispatch order.
 *
 * @example
 * ```ts
 * const settled: WindowBatch[] = [];
 * const window = new DispatchWindow<WindowBatch>({
 *   checkOvertaking: false,
 *   onSettled: (b) => settled.push(b),
 *   onReordered: () => {},
 * });
 * const batch: WindowBatch = { state: 'open', attempt: 0, dispatchedAfter: 0, offsets: undefined };
 * window.enqueue(batch);
 * const next = window.takeReady();
 * if (next !== undefined) {
 *   const attempt = window.dispatch(next);
 *   if (window.answered(next, attempt)) window.acked(next, new Map([['t', { next: [0] }]]));
 * }
 * ```
 */
export class DispatchWindow<B extends WindowBatch> {
  private ready: B[] = [];
  /** Dispatched batches not yet settled, in dispatch order; settled from the head. */
  private inFlight: B[] = [];
  /** Calls not yet answered (stale ones included). */
  private outstanding = 0;
  /** After a re-send was asked: dispatch nothing until every outstanding call is answered. */
  private settling = false;
  /** Batches acknowledged so far (for the overtaking check). */
  private completions = 0;
  /** Per `topic\0partition`: the base offset of the last acknowledged batch there, and `completions` then. */
  private readonly lastBase = new Map<string, { base: number; at: number }>();

  constructor(private readonly options: DispatchWindowOptions<B>) {}

  /** The oldest dispatched batch not yet settled. */
  get head(): B | undefined {
    return this.inFlight[0];
  }

  /** Calls dispatched and not yet answered, stale ones included. */
  get unanswered(): number {
    return this.outstanding;
  }

  /** Queues a sealed batch behind the others. */
  enqueue(batch: B): void {
    batch.state = 'queued';
    this.ready.push(batch);
  }

  /**
   * True while a re-send waits for the calls still out to be answered; clears that hold once
   * none is out.
   */
  holding(): boolean {
    if (!this.settling) return false;
    if (this.outstanding > 0) return true;
    this.settling = false;
    return false;
  }

  /** True when fewer than `slots` calls are out. */
  hasSlot(slots: number): boolean {
    return this.outstanding < slots;
  }

  /** The next queued batch, taken off the queue. */
  takeReady(): B | undefined {
    return this.ready.shift();
  }

  /** Notes that `batch` went out; returns its dispatch number, to hand back to {@link answered}. */
  dispatch(batch: B): number {
    batch.state = 'inflight';
    batch.dispatchedAfter = this.completions;
    this.inFlight.push(batch);
    this.outstanding++;
    return ++batch.attempt;
  }

  /**
   * Notes that a call was answered; true when the answer is the one `batch` waits for (not
   * stale: neither an earlier dispatch nor a batch already given back).
   */
  answered(batch: B, attempt: number): boolean {
    this.outstanding--;
    return batch.attempt === attempt && batch.state === 'inflight';
  }

  /** `batch` was acknowledged at `offsets`: settles what can be settled from the head. */
  acked(batch: B, offsets: NonNullable<B['offsets']>): void {
    batch.state = 'acked';
    batch.offsets = offsets;
    this.settleHead();
  }

  /** `batch` failed for good: settles what can be settled from the head. */
  failed(batch: B): void {
    batch.state = 'failed';
    this.settleHead();
  }

  /** Puts `rest` (split off `batch`, and in flight with it) right behind it in the window. */
  insertAfter(batch: B, rest: B): void {
    rest.state = 'inflight';
    this.inFlight.splice(this.indexOf(batch) + 1, 0, rest);
  }

  /**
   * Puts `batch` and every batch dispatched after it back at the front of the queue, in order
   * (those already failed for good are settled instead), and holds dispatching until the calls
   * still outstanding have been answered.
   */
  goBack(batch: B): void {
    const again = this.inFlight.splice(this.indexOf(batch));
    const requeue: B[] = [];
    for (const b of again) {
      if (b.state === 'failed') {
        this.options.onSettled(b);
      } else {
        b.state = 'queued';
        b.offsets = undefined;
        requeue.push(b);
      }
    }
    this.ready.unshift(...requeue);
    this.settling = true;
  }

  /** Takes the queued batches for which `expired` holds off the queue, keeping the others' order. */
  takeExpired(expired: (batch: B) => boolean): B[] {
    const keep: B[] = [];
    const gone: B[] = [];
    for (const batch of this.ready) (expired(batch) ? gone : keep).push(batch);
    this.ready = keep;
    return gone;
  }

  /** Empties the window and the queue; returns their batches, dispatched ones first. */
  drain(): B[] {
    const all = [...this.inFlight, ...this.ready];
    this.inFlight = [];
    this.ready = [];
    return all;
  }

  private indexOf(batch: B): number {
    const at = this.inFlight.indexOf(batch);
    if (at < 0) throw new Error('DispatchWindow: the batch is not in flight (a sender bug)');
    return at;
  }

  /** Settles dispatched batches from the oldest while they are answered, keeping dispatch order. */
  private settleHead(): void {
    while (this.inFlight.length > 0) {
      const head = this.inFlight[0] as B;
      if (head.state === 'acked') {
        if (this.options.checkOvertaking && this.overtaken(head)) {
          this.options.onReordered(head);
          this.goBack(head);
          return;
        }
        this.options.onSettled(head);
      } else if (head.state === 'failed') {
        this.options.onSettled(head);
      } else {
        return;
      }
      this.inFlight.shift();
    }
  }

  /**
   * True when an earlier batch that was in flight at the same time as `batch` landed after it
   * in one of its partitions (a smaller or equal base offset than that batch's). Otherwise
   * records the batch's base offsets.
   */
  private overtaken(batch: B): boolean {
    const offsets: PartitionBases = batch.offsets ?? new Map();
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
}
