import { interval, type Subscription } from 'rxjs';
import { canonicalJson } from '../../api/canonical-json.js';
import { TributaryError, toTributaryError } from '../../api/errors.js';
import { withTimeout } from '../clock-timers.js';
import type { JsonObject, OffsetEntry, OffsetStore } from '../ports.js';
import type { Committable } from '../submitted-records.js';
import type { CommitterHost, OffsetCommitter, OffsetMap } from './offset-committer.js';

/**
 * At-least-once: acknowledged offsets are written to the offset store every
 * `offset.flush.interval.ms` and at a graceful stop, one flush at a time, each bounded by
 * `offset.flush.timeout.ms`. A failed flush puts its offsets back under newer ones for the next
 * flush; after each successful one the task's commit() hook runs, then its sourceLag().
 */
export class FlushCommitter<P, O> implements OffsetCommitter<P, O> {
  private pending: OffsetMap = new Map();
  /** Acknowledged records (and their bytes) taken out of `submitted` whose offsets are in `pending`, not yet flushed. */
  private pendingRecords = 0;
  private pendingBytes = 0;
  /** The same for the flush being written. */
  private flushingRecords = 0;
  private flushingBytes = 0;
  private flushing: Promise<boolean> | undefined;
  private storeWrite: Promise<unknown> | undefined;
  private timer: Subscription | undefined;
  /** The last committed offset of each partition (canonical JSON), to log a flush only when it changes something. */
  private readonly committed = new Map<string, string>();
  /** Set while the final flush of a stop runs: it logs its own line, and a failure then is not retried. */
  private finalFlush = false;
  /** Partitions whose offset the last successful flush changed. */
  private lastFlushChanged = 0;
  finalError: TributaryError | undefined;
  readonly discarding = false;
  readonly handedOver = undefined;

  constructor(
    private readonly host: CommitterHost<P, O>,
    private readonly store: OffsetStore,
  ) {}

  start(committed: ReadonlyMap<string, { readonly offset: JsonObject }>): void {
    // So that the first flush logs only what it changes (up to 10,000 partitions).
    if (committed.size <= 10_000) for (const [key, entry] of committed) this.committed.set(key, canonicalJson(entry.offset));
    this.timer = interval(this.host.settings().flushIntervalMs, this.host.clock.scheduler).subscribe(() => this.periodicFlush());
  }

  roundEnded(): undefined {
    return undefined;
  }

  pollPaused(): void {}

  inRound(): void {}

  warning(): undefined {
    return undefined;
  }

  transactionContext(): undefined {
    return undefined;
  }

  uncommitted(): { records: number; bytes: number } {
    return { records: this.pendingRecords + this.flushingRecords, bytes: this.pendingBytes + this.flushingBytes };
  }

  async commitNow(): Promise<boolean> {
    while (this.flushing) await this.flushing;
    return this.runFlush();
  }

  async beforeDrain(): Promise<void> {}

  halt(): void {
    this.timer?.unsubscribe();
  }

  /** The final flush of a graceful stop, after the in-flight records were waited for. */
  async finalCommit(timeoutMs: number): Promise<void> {
    this.timer?.unsubscribe();
    // A write that timed out may still land: give it the grace period before the final flush.
    if (this.storeWrite) await withTimeout(this.host.clock, this.storeWrite, timeoutMs);
    if (!this.host.taskStarted()) return;
    while (this.flushing) await this.flushing;
    this.finalFlush = true;
    this.lastFlushChanged = 0;
    let flushed = false;
    try {
      flushed = await this.commitNow();
    } finally {
      this.finalFlush = false;
    }
    if (flushed) {
      const n = this.lastFlushChanged;
      this.host.log.info(
        { event: 'offsets.flushed.final', count: n },
        n === 0 ? 'final offset flush: nothing new to commit' : `final offset flush: ${n} offset${n === 1 ? '' : 's'} committed`,
      );
    }
  }

  private periodicFlush(): void {
    if (this.flushing || this.host.state() === 'UNASSIGNED') return;
    void this.runFlush();
  }

  private runFlush(): Promise<boolean> {
    // Never rejects: a periodic flush has no caller to take its error.
    const run = this.flushOnce()
      .catch((e: unknown) => {
        this.flushFailed(toTributaryError(e, 'OFFSET_FLUSH_FAILED', `Offset flush of task ${this.host.id} failed`));
        return false;
      })
      .finally(() => {
        if (this.flushing === run) this.flushing = undefined;
      });
    this.flushing = run;
    return run;
  }

  takeCommittable(): void {
    const taken = this.host.submitted.takeCommittable();
    for (const [key, entry] of taken) this.pending.set(key, entry);
    this.pendingRecords += taken.records;
    this.pendingBytes += taken.bytes;
  }

  private async flushOnce(): Promise<boolean> {
    const started = this.host.clock.now();
    this.takeCommittable();
    // Stored, an offset the task cannot read back would fail its next start (and every commit()
    // until then): the others are stored as usual, then the task fails. Checked before the
    // KIP-910 hook sees the offsets (it would fail on them) and after (its updates too).
    let unreadable = this.host.rules.dropUnreadable(this.pending);
    if (this.host.task.updateOffsets) {
      await this.host.applyOffsetUpdates(() => this.pending);
      // Always: the updates are encoded, never decoded, on their way in.
      const fromUpdates = this.host.rules.dropUnreadable(this.pending);
      unreadable ??= fromUpdates;
    }
    if (unreadable === undefined) return this.flushPending(started, true);
    let stored = false;
    try {
      stored = await this.flushPending(started, false);
    } finally {
      // A store failure was reported by the flush itself, and says more (nothing was stored).
      if (stored) this.flushFailed(unreadable);
      this.host.fail(unreadable);
    }
    return false;
  }

  /**
   * Stores the pending offsets (the body of a flush once they are checked). `complete` is false
   * when some were left out as unreadable: the flush then counts as failed in the task's metrics.
   */
  private async flushPending(started: number, complete: boolean): Promise<boolean> {
    if (this.pending.size === 0) {
      this.host.listener.flushCompleted?.({
        ok: complete,
        durationMs: this.host.clock.now() - started,
        partitions: 0,
        records: 0,
        bytes: 0,
      });
      await this.host.commitHook([]);
      await this.host.reportLag();
      return true;
    }
    const toFlush = this.pending;
    const records = this.pendingRecords;
    const bytes = this.pendingBytes;
    this.pending = new Map();
    this.pendingRecords = 0;
    this.pendingBytes = 0;
    this.flushingRecords = records;
    this.flushingBytes = bytes;
    const entries: OffsetEntry[] = [...toFlush.values()].map((e) => ({ partition: e.partition, offset: e.offset }));
    // Stores apply writes in call order (see OffsetStore), so a write that timed out here and
    // lands later cannot overwrite a newer one.
    let write: Promise<void>;
    try {
      write = this.store.write(this.host.connector, entries);
    } catch (e) {
      // A store that throws instead of rejecting: the offsets go back for the next flush.
      write = Promise.reject(e);
    }
    this.storeWrite = write;
    write.then(
      () => this.writeSettled(write),
      () => this.writeSettled(write),
    );
    const outcome = await withTimeout(this.host.clock, write, this.host.settings().flushTimeoutMs);
    this.flushingRecords = 0;
    this.flushingBytes = 0;
    if (!outcome.ok) {
      this.restore(toFlush);
      const what = this.finalFlush ? `Final offset flush of task ${this.host.id}` : `Offset flush of task ${this.host.id}`;
      const then = this.finalFlush
        ? `; the task is stopping, so the offsets of ${toFlush.size} source partition(s) are not stored and the next run sends their records again from the last stored offsets`
        : '; retrying at the next flush';
      this.pendingRecords += records;
      this.pendingBytes += bytes;
      this.host.listener.flushCompleted?.({
        ok: false,
        durationMs: this.host.clock.now() - started,
        partitions: entries.length,
        records: 0,
        bytes: 0,
      });
      this.flushFailed(
        outcome.timedOut
          ? new TributaryError(
              'OFFSET_FLUSH_TIMEOUT',
              `${what} took longer than offset.flush.timeout.ms (${this.host.settings().flushTimeoutMs} ms)${then}`,
              { retriable: !this.finalFlush },
            )
          : this.finalFlush
            ? new TributaryError(
                'OFFSET_FLUSH_FAILED',
                `${what} failed${then}: ${outcome.error instanceof Error ? outcome.error.message : String(outcome.error)}`,
                { cause: outcome.error, retriable: false },
              )
            : toTributaryError(outcome.error, 'OFFSET_FLUSH_FAILED', `${what} failed${then}`),
      );
      // The committed offsets did not move, but the source may have: without asking again, a
      // lag last seen at 0 would keep a task whose flushes all fail from ever showing stale.
      if (!this.finalFlush) await this.host.reportLag();
      return false;
    }
    const changed = entries.filter((e) => {
      const key = canonicalJson(e.partition);
      const value = e.offset === null ? 'null' : canonicalJson(e.offset);
      if (this.committed.get(key) === value) return false;
      // Only for the log line: a source with a partition per entity must not grow this without
      // bound (at worst, unchanged offsets are logged once more after a clear).
      if (this.committed.size >= 10_000) this.committed.clear();
      this.committed.set(key, value);
      return true;
    });
    this.lastFlushChanged = changed.length;
    // A heartbeat that carries the same offset again is written, but is not news.
    const fields = { event: 'offsets.committed', count: changed.length, offsets: changed.slice(0, 10) };
    if (changed.length > 0 && !this.finalFlush) this.host.log.info(fields, 'offsets committed');
    else this.host.log.debug({ ...fields, unchanged: entries.length - changed.length }, 'offsets committed');
    this.host.listener.flushCompleted?.({
      ok: complete,
      durationMs: this.host.clock.now() - started,
      partitions: entries.length,
      records,
      bytes,
    });
    this.host.listener.offsetsFlushed?.(entries);
    await this.host.commitHook(toFlush.values());
    await this.host.reportLag();
    return true;
  }

  private writeSettled(write: Promise<unknown>): void {
    if (this.storeWrite === write) this.storeWrite = undefined;
  }

  /** Puts offsets that failed to flush back under any newer ones. */
  private restore(toFlush: Map<string, Committable<JsonObject, JsonObject>>): void {
    for (const [key, entry] of toFlush) if (!this.pending.has(key)) this.pending.set(key, entry);
  }

  private flushFailed(error: TributaryError): void {
    if (this.finalFlush) {
      this.finalError = error;
      this.host.log.error({ event: 'offsets.flush.final.failed', err: error }, error.message);
      this.host.listener.flushFailed?.(error);
      return;
    }
    this.host.log.warn({ event: 'offsets.flush.failed', err: error }, error.message);
    this.host.listener.flushFailed?.(error);
    if (error.code === 'OFFSET_STORE_LOCKED') {
      // Another worker took the offsets file over: no later flush can store anything, and both
      // would write the same records. Not retried: the task stops and says why.
      this.host.fail(
        new TributaryError(
          'OFFSET_STORE_LOCKED',
          `Task ${this.host.id} can no longer store its offsets, so it stops instead of writing records it cannot commit: ${error.message}`,
          { cause: error, retriable: false },
        ),
      );
    }
  }
}
