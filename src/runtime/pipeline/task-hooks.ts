import type { Clock } from '../../api/clock.js';
import type { Logger } from '../../api/logger.js';
import type { SourceTask } from '../../api/source-task.js';
import { withTimeout } from '../clock-timers.js';
import type { JsonObject } from '../ports.js';
import type { Committable } from '../submitted-records.js';
import type { OffsetRules } from './offset-rules.js';
import { safeJson } from './record-checks.js';
import type { TaskListener } from './task-listener.js';

/**
 * The task's hooks that run after offsets are committed: `commit()` with what was made durable,
 * then `sourceLag()`. Each is bounded by `offset.flush.timeout.ms` and never fails the task; a
 * task whose stop() was called hears nothing more.
 */
export class TaskHooks<P, O> {
  private lagFailed = false;

  constructor(
    private readonly task: SourceTask<P, O, unknown>,
    private readonly rules: OffsetRules<P, O>,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly listener: TaskListener,
    /** `offset.flush.timeout.ms`. */
    private readonly timeoutMs: () => number,
    /** Whether the task's start() succeeded. */
    private readonly started: () => boolean,
    /** Whether the task's stop() was called. */
    private readonly stopped: () => boolean,
  ) {}

  /** Asks the task how far behind its source it is (after each flush, so against fresh committed offsets); bounded, never fails the task. */
  async reportLag(): Promise<void> {
    if (!this.task.sourceLag || !this.started()) return;
    try {
      const outcome = await withTimeout(
        this.clock,
        Promise.resolve().then(() => this.task.sourceLag?.()),
        this.timeoutMs(),
      );
      if (!outcome.ok) {
        if (outcome.timedOut) throw new Error(`it did not return within offset.flush.timeout.ms (${this.timeoutMs()} ms)`);
        throw outcome.error;
      }
      const lag = outcome.value ?? undefined;
      if (lag !== undefined && !(Number.isFinite(lag.position) && lag.position >= 0)) {
        throw new Error(`it returned position ${safeJson(lag.position)}: a finite number >= 0 is accepted`);
      }
      if (lag?.timeMs !== undefined && !(Number.isFinite(lag.timeMs) && lag.timeMs >= 0)) {
        throw new Error(`it returned timeMs ${safeJson(lag.timeMs)}: a finite number >= 0, or none, is accepted`);
      }
      this.lagFailed = false;
      this.listener.sourceLag?.(lag);
    } catch (e) {
      // Logged at warn once per run of failures, then at debug: it is asked after every flush.
      const fields = { event: 'task.sourceLag.failed', err: e };
      const message = `sourceLag() failed; the source lag is shown unknown: ${(e as Error).message}`;
      if (this.lagFailed) this.log.debug(fields, message);
      else this.log.warn(fields, message);
      this.lagFailed = true;
      this.listener.sourceLag?.(undefined);
    }
  }

  /** Runs the task's commit() with what the flush made durable; bounded, so a hung hook cannot stop later flushes. */
  async commitHook(committed: Iterable<Committable<JsonObject, JsonObject>>): Promise<void> {
    // A transaction that committed after the task's stop() was called: the task hears nothing more.
    if (this.stopped()) return;
    try {
      const outcome = await withTimeout(
        this.clock,
        Promise.resolve(this.task.commit(this.rules.decodeAll(committed))),
        this.timeoutMs(),
      );
      if (!outcome.ok) {
        if (outcome.timedOut) throw new Error(`it did not return within offset.flush.timeout.ms (${this.timeoutMs()} ms)`);
        throw outcome.error;
      }
    } catch (e) {
      this.log.warn({ event: 'task.commit.failed', err: e }, `commit() failed; ignored: ${(e as Error).message}`);
    }
    this.listener.committed?.();
  }
}
