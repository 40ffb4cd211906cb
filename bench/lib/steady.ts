/**
 * The steady-state rate of a run, from the harness's samples of how many records the topic held:
 * records per second between the moments the topic held `from` and `to` of the records the run
 * wrote (10% and 90% by default). Start-up (process start to the first records, a JVM's warm-up,
 * the first metadata round trips) falls before the window and the final drain (the last batches,
 * the stop) after it, so one definition serves runs that end with the input and runs stopped
 * after a fixed time.
 */

/** One poll of the topic: `at` (ms, any clock) and the records it held then. */
export interface ProgressSample {
  readonly at: number;
  readonly records: number;
}

/** The window the steady rate was taken over. */
export interface SteadyWindow {
  /** Records per second inside the window. */
  readonly perSec: number;
  /** When the window opened and closed, on the samples' clock (ms). */
  readonly fromAt: number;
  readonly toAt: number;
  /** Records inside the window. */
  readonly records: number;
}

/**
 * The time at which the count reached `target`, interpolated linearly between the two samples
 * around it (the topic is polled every 50 ms, so a crossing lies between two polls).
 */
function crossing(samples: readonly ProgressSample[], target: number): number | undefined {
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i] as ProgressSample;
    if (s.records < target) continue;
    if (i === 0) return s.at;
    const p = samples[i - 1] as ProgressSample;
    if (s.records === p.records) return s.at;
    return p.at + ((target - p.records) / (s.records - p.records)) * (s.at - p.at);
  }
  return undefined;
}

/**
 * Records/s between the moments `from` and `to` (fractions of `total`) of the records were in
 * the topic; undefined when the samples do not span the window or it has no width.
 *
 * @param samples Polls in time order; counts never go down.
 * @param total The records the run wrote (its last count, or the expected total).
 */
export function steadyRate(samples: readonly ProgressSample[], total: number, from = 0.1, to = 0.9): SteadyWindow | undefined {
  if (!(total > 0) || !(from >= 0 && to <= 1 && from < to)) return undefined;
  const lo = Math.max(1, total * from);
  const hi = total * to;
  const fromAt = crossing(samples, lo);
  const toAt = crossing(samples, hi);
  if (fromAt === undefined || toAt === undefined || !(toAt > fromAt)) return undefined;
  const records = hi - lo;
  return { perSec: records / ((toAt - fromAt) / 1000), fromAt, toAt, records };
}
