import type { Clock } from '../api/clock.js';

/** A promise that resolves after `ms` of the clock's time, and a way to cancel it. */
export function clockDelay(clock: Clock, ms: number): { promise: Promise<void>; cancel: () => void } {
  let cancel = () => {};
  const promise = new Promise<void>((resolve) => {
    const sub = clock.scheduler.schedule(() => resolve(), ms);
    cancel = () => {
      sub.unsubscribe();
      resolve();
    };
  });
  return { promise, cancel };
}

/** Resolves with the promise's outcome, or with `{ timedOut: true }` after `ms` of the clock's time. */
export async function withTimeout<T>(
  clock: Clock,
  promise: Promise<T>,
  ms: number,
): Promise<{ ok: true; value: T } | { ok: false; timedOut: boolean; error?: unknown }> {
  const timer = clockDelay(clock, ms);
  try {
    return await Promise.race([
      promise.then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, timedOut: false, error }),
      ),
      timer.promise.then(() => ({ ok: false as const, timedOut: true })),
    ]);
  } finally {
    timer.cancel();
  }
}

/** Lets timers and I/O callbacks run: the poll loop calls it between rounds so it never starves them. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
