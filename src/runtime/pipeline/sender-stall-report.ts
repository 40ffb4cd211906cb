import type { Logger } from '../../api/logger.js';
import type { SenderStall } from '../ports.js';

/** How often, at most, a lasting sender stall is logged again (ms of stall). */
const STALL_LOG_INTERVAL_MS = 30_000;

/**
 * The sender's last stall report (Kafka does not acknowledge records: broker down, unreachable
 * or frozen), for the task's status; logged at WARN at first, then at most every 30 s of stall,
 * and at INFO once Kafka acknowledges again.
 */
export class SenderStallReport {
  private stall: SenderStall | undefined;
  /** The stall duration last logged. */
  private logged = 0;

  constructor(
    private readonly id: string,
    private readonly log: Logger,
    private readonly maxInFlight: () => number,
  ) {}

  /** True while the sender reports a stall. */
  get stalled(): boolean {
    return this.stall !== undefined;
  }

  /** What the task status says while the sender stalls; else undefined. */
  warning(): string | undefined {
    const stall = this.stall;
    if (stall === undefined) return undefined;
    return (
      `Kafka has not acknowledged records of task ${this.id} for ${Math.round(stall.durationMs / 1000)} s ` +
      `(since ${new Date(stall.since).toISOString()}): ${stall.reason}. The records are kept and sent again in order; ` +
      `polling pauses while ${this.maxInFlight()} records are unacknowledged. ` +
      'Check that the brokers in bootstrap.servers are up and reachable from this worker.'
    );
  }

  /** The sender's report: a stall, or undefined when it is over. */
  report(stall: SenderStall | undefined): void {
    const previous = this.stall;
    this.stall = stall;
    if (stall === undefined) {
      if (previous !== undefined) {
        this.log.info(
          { event: 'sender.recovered', stalledMs: previous.durationMs },
          `Kafka acknowledges records again after about ${Math.round(previous.durationMs / 1000)} s`,
        );
      }
      this.logged = 0;
      return;
    }
    if (previous === undefined || stall.durationMs - this.logged >= STALL_LOG_INTERVAL_MS) {
      this.logged = stall.durationMs;
      this.log.warn(
        { event: 'sender.stalled', stalledMs: stall.durationMs, since: stall.since, reason: stall.reason },
        this.warning() ?? stall.reason,
      );
    }
  }
}
