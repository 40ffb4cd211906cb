import { asyncScheduler, type SchedulerLike } from 'rxjs';

/**
 * The only source of time for the runtime and for tasks.
 *
 * Tasks read time through `context.clock` so that the mock runtime can run them in
 * virtual time. Use `clock.scheduler` with RxJS time operators (`timer(ms, clock.scheduler)`),
 * `clock.now()` instead of `Date.now()`, and `clock.sleep(ms)` instead of `setTimeout`.
 */
export interface Clock {
  /** Milliseconds since the epoch (virtual in tests). */
  now(): number;
  /** The RxJS scheduler that drives every timer of the runtime and of tasks. */
  readonly scheduler: SchedulerLike;
  /** Resolves after `ms` milliseconds of this clock's time. */
  sleep(ms: number): Promise<void>;
}

/** The wall clock: `Date.now()` and RxJS's `asyncScheduler`. */
export const systemClock: Clock = {
  now: () => Date.now(),
  scheduler: asyncScheduler,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};
