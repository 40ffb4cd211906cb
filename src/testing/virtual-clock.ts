import { type SchedulerAction, type SchedulerLike, Subscription } from 'rxjs';
import type { Clock } from '../api/clock.js';

/** A duration in milliseconds, or text such as `'250ms'`, `'10s'`, `'5m'`, `'1h'`, `'1d'`. */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`;

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Milliseconds in a {@link Duration}; throws a RangeError that shows the accepted forms. */
export function toMillis(duration: Duration): number {
  if (typeof duration === 'number') {
    if (!Number.isFinite(duration) || duration < 0) throw new RangeError(`Duration must be >= 0, got ${duration}`);
    return duration;
  }
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(duration);
  if (!m) throw new RangeError(`Duration "${duration}" is not a number of ms, s, m, h or d, e.g. '500ms' or '1h'`);
  return Number(m[1]) * (UNITS[m[2] as string] as number);
}

/** A file-system request in flight: `FSReqCallback`/`FSReqPromise`, and `CloseReq` for `FileHandle.close()`. */
const isFileRequest = (resource: string): boolean => resource.startsWith('FSReq') || resource === 'CloseReq';

class VirtualAction<T> extends Subscription implements SchedulerAction<T> {
  due = 0;
  seq = 0;
  state: T | undefined;

  constructor(
    private readonly clock: VirtualClock,
    private readonly work: (this: SchedulerAction<T>, state?: T) => void,
  ) {
    super(() => clock.remove(this));
  }

  schedule(state?: T, delay = 0): Subscription {
    if (this.closed) return this;
    this.state = state;
    this.clock.enqueue(this, delay);
    return this;
  }

  execute(): void {
    this.work.call(this, this.state);
  }

  /** The scheduled function's name, to tell a leaked timer by. */
  get name(): string {
    return this.work.name || 'an anonymous function';
  }
}

/**
 * A clock whose time moves only when told: `advanceBy('1h')` runs every timer due in that
 * hour, in order, and lets Promises and I/O callbacks settle between them, so tasks that do
 * async work between timers behave as they would in real time, in milliseconds.
 */
export class VirtualClock implements Clock {
  private time: number;
  private seq = 0;
  private readonly queue: VirtualAction<unknown>[] = [];
  readonly scheduler: SchedulerLike;

  /** @param start - the initial time in ms since the epoch (default 2026-01-01T00:00:00Z) */
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.time = start;
    this.scheduler = {
      now: () => this.time,
      schedule: <T>(work: (this: SchedulerAction<T>, state?: T) => void, delay = 0, state?: T): Subscription =>
        new VirtualAction<T>(this, work).schedule(state, delay),
    };
  }

  now(): number {
    return this.time;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.scheduler.schedule(() => resolve(), ms));
  }

  /** When the next timer fires (ms since the epoch), or undefined when none is waiting. */
  get nextTimerAt(): number | undefined {
    return this.queue[0]?.due;
  }

  /** Timers waiting to fire. */
  get pendingTimers(): number {
    return this.queue.length;
  }

  /** @internal What each waiting timer will call and when, e.g. `tick in 100 ms`, soonest first. */
  describePending(): string[] {
    return this.queue.map((action) => `${action.name} in ${action.due - this.time} ms`);
  }

  /** Moves time forward by `duration`, firing due timers in order and settling Promises between them. */
  async advanceBy(duration: Duration): Promise<void> {
    await this.advanceTo(this.time + toMillis(duration));
  }

  /** Moves time forward to `target` (ms since the epoch); see {@link advanceBy}. */
  async advanceTo(target: number): Promise<void> {
    await this.settle();
    for (;;) {
      const next = this.queue[0];
      if (!next || next.due > target) break;
      this.queue.shift();
      this.time = Math.max(this.time, next.due);
      next.execute();
      await this.settle();
    }
    this.time = Math.max(this.time, target);
    await this.settle();
  }

  /**
   * Lets pending Promise callbacks, immediates and file-system callbacks run, without moving
   * time: returns once several event-loop turns in a row had no file-system request open.
   */
  async settle(): Promise<void> {
    let quiet = 0;
    for (let turn = 0; turn < 10_000 && quiet < 3; turn++) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      quiet = process.getActiveResourcesInfo().some(isFileRequest) ? 0 : quiet + 1;
    }
  }

  /** @internal */
  enqueue(action: VirtualAction<any>, delay: number): void {
    this.remove(action);
    action.due = this.time + Math.max(0, delay);
    action.seq = this.seq++;
    let i = this.queue.length;
    while (i > 0) {
      const prev = this.queue[i - 1] as VirtualAction<unknown>;
      if (prev.due < action.due || (prev.due === action.due && prev.seq < action.seq)) break;
      i--;
    }
    this.queue.splice(i, 0, action);
  }

  /** @internal */
  remove(action: VirtualAction<any>): void {
    const i = this.queue.indexOf(action);
    if (i >= 0) this.queue.splice(i, 1);
  }
}
