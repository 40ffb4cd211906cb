/** Small statistics helpers for benchmark figures. */

/** The median (mean of the middle two for an even count); NaN for no values. */
export function median(values: readonly number[]): number {
  const xs = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (xs.length === 0) return Number.NaN;
  const mid = Math.floor(xs.length / 2);
  return xs.length % 2 === 1 ? (xs[mid] as number) : ((xs[mid - 1] as number) + (xs[mid] as number)) / 2;
}

/** The p-th percentile (0..100), nearest-rank; NaN for no values. */
export function percentile(values: readonly number[], p: number): number {
  const xs = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (xs.length === 0) return Number.NaN;
  const rank = Math.min(xs.length, Math.max(1, Math.ceil((p / 100) * xs.length)));
  return xs[rank - 1] as number;
}

/** Smallest and largest value. */
export function range(values: readonly number[]): [number, number] {
  const xs = values.filter((v) => Number.isFinite(v));
  return xs.length === 0 ? [Number.NaN, Number.NaN] : [Math.min(...xs), Math.max(...xs)];
}
