import { setTimeout as sleep } from 'node:timers/promises';

/** Something whose virtual time moves: a MockRuntime. */
export interface Advanceable {
  advanceBy(ms: number): Promise<void>;
}

/** Options of {@link eventually}. */
export interface EventuallyOptions {
  /** Runtimes whose virtual time moves in step with real time while waiting. */
  readonly runs?: readonly Advanceable[];
  /** Real (and virtual) milliseconds per step; default 100. */
  readonly stepMs?: number;
  /** Real milliseconds before giving up; default 20 000. */
  readonly timeoutMs?: number;
}

/**
 * Waits until `probe` returns something truthy and returns it, moving the given runtimes'
 * virtual time in step with real time: the database answers in real time, the task's timers
 * (heartbeats, flushes) run on the mock runtime's clock. Throws naming `what` on timeout.
 */
export async function eventually<T>(
  what: string,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: EventuallyOptions = {},
): Promise<T> {
  const step = options.stepMs ?? 100;
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    for (const run of options.runs ?? []) await run.advanceBy(step);
    await sleep(step);
  }
}
