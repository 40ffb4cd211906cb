/**
 * Notices when Kafka stops acknowledging a sender's records, and tells the sender's
 * `onStall` listeners: at once, again every few seconds while it lasts, and when it ends.
 */
import type { SenderStall } from '../runtime/ports.js';

/** How often, in ms, the monitor checks for unanswered requests while records wait. */
const WATCH_INTERVAL_MS = 1000;
/** How often, in ms, a lasting stall is reported again (with its duration). */
const STALL_REPORT_INTERVAL_MS = 5000;

/** What the monitor asks the sender on each check. */
export interface StallProbe {
  /** Records handed to the sender whose callback has not run yet. */
  pending(): number;
  /** When (ms since the epoch) the oldest unanswered batch was dispatched; undefined when none is out. */
  oldestDispatchedAt(): number | undefined;
}

/**
 * A stall is noted by the sender ({@link stall}: a failed request, a producer that cannot
 * connect) or by the monitor itself, when a request has gone unanswered for
 * `request.timeout.ms`. It ends with {@link recovered} (an acknowledgement) or when no record
 * waits any more. A timer runs only while records wait.
 */
export class StallMonitor {
  private readonly listeners: Array<(stall: SenderStall | undefined) => void> = [];
  private stalled: { since: number; reason: string; reportedAt: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  /**
   * @param requestTimeoutMs How long a request may go unanswered before it counts as a stall.
   * @param probe The sender's view of what waits.
   * @param onAsyncError Receives what a throwing listener throws.
   */
  constructor(
    private readonly requestTimeoutMs: number,
    private readonly probe: StallProbe,
    private readonly onAsyncError: (error: Error) => void,
  ) {}

  /** Adds a listener; see `RecordSender.onStall`. */
  listen(listener: (stall: SenderStall | undefined) => void): void {
    this.listeners.push(listener);
  }

  /** Keeps a timer running while records wait, to notice requests that go unanswered. */
  watch(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setTimeout(this.onWatch, WATCH_INTERVAL_MS);
    this.timer.unref?.();
  }

  /** Notes that records are not being acknowledged, for `reason` since `since`; reports it the first time. */
  stall(since: number, reason: string, now: number): void {
    const stalled = this.stalled;
    if (stalled !== undefined) {
      stalled.reason = reason;
      return;
    }
    this.stalled = { since, reason, reportedAt: now };
    this.report({ since, durationMs: now - since, reason });
    this.watch();
  }

  /** A batch was acknowledged: ends a stall, if one was reported. */
  recovered(): void {
    if (this.stalled === undefined) return;
    this.stalled = undefined;
    this.report(undefined);
  }

  /** Stops the timer for good (the sender closed). */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  private readonly onWatch = (): void => {
    this.timer = undefined;
    if (this.stopped) return;
    if (this.probe.pending() === 0) {
      this.recovered();
      return;
    }
    const now = Date.now();
    const stalled = this.stalled;
    if (stalled === undefined) {
      const dispatchedAt = this.probe.oldestDispatchedAt();
      if (dispatchedAt !== undefined && now - dispatchedAt >= this.requestTimeoutMs) {
        this.stall(dispatchedAt, `no answer from Kafka within request.timeout.ms=${this.requestTimeoutMs}`, now);
      }
    } else if (now - stalled.reportedAt >= STALL_REPORT_INTERVAL_MS) {
      stalled.reportedAt = now;
      this.report({ since: stalled.since, durationMs: now - stalled.since, reason: stalled.reason });
    }
    this.watch();
  };

  private report(stall: SenderStall | undefined): void {
    for (const listener of this.listeners) {
      try {
        listener(stall);
      } catch (e) {
        this.onAsyncError(e instanceof Error ? e : new Error(String(e)));
      }
    }
  }
}
