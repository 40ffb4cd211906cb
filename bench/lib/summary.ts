/**
 * Medians per contender over its runs, and ratios against Kafka Connect.
 */
import { CONTENDER_ORDER, type ContenderId } from '../contenders/contender.js';
import type { RunResult } from './measure-run.js';
import { median, range } from './stats.js';

/** One contender's medians. */
export interface Summary {
  readonly contender: ContenderId;
  readonly label: string;
  readonly runs: number;
  readonly okRuns: number;
  readonly wallS: number;
  readonly recordsPerSec: number;
  readonly recordsPerSecRange: [number, number];
  readonly steadyPerSec: number;
  readonly cpuS: number;
  readonly cpuUsPerRecord: number;
  readonly peakRssMiB: number;
  readonly firstRecordS: number;
  readonly stopS: number;
  readonly brokerCpuS: number;
  readonly loadBefore: number;
}

/** Medians over the runs that passed their checks (all runs if none did, so figures still show). */
export function summarise(results: readonly RunResult[], records: number): Summary[] {
  const out: Summary[] = [];
  for (const id of CONTENDER_ORDER) {
    const all = results.filter((r) => r.contender === id);
    if (all.length === 0) continue;
    const ok = all.filter((r) => r.ok);
    const use = ok.length > 0 ? ok : all;
    const m = (f: (r: RunResult) => number | undefined): number => median(use.map((r) => f(r) ?? Number.NaN));
    const cpuS = m((r) => r.cpuS);
    out.push({
      contender: id,
      label: (all[0] as RunResult).label,
      runs: all.length,
      okRuns: ok.length,
      wallS: m((r) => r.wallS),
      recordsPerSec: m((r) => r.recordsPerSec),
      recordsPerSecRange: range(use.map((r) => r.recordsPerSec)),
      steadyPerSec: m((r) => r.steadyPerSec),
      cpuS,
      cpuUsPerRecord: (cpuS / records) * 1e6,
      peakRssMiB: m((r) => r.peakRssMiB),
      firstRecordS: m((r) => r.firstRecordS),
      stopS: m((r) => r.stopS),
      brokerCpuS: m((r) => r.brokerCpuS),
      loadBefore: m((r) => r.loadBefore),
    });
  }
  return out;
}

/** `f(a) / f(b)` of two contenders' medians, or NaN when either did not run. */
export function ratioOf(
  summaries: readonly Summary[],
  a: ContenderId,
  b: ContenderId,
  f: (s: Summary) => number = (s) => s.steadyPerSec,
): number {
  const x = summaries.find((s) => s.contender === a);
  const y = summaries.find((s) => s.contender === b);
  return x === undefined || y === undefined ? Number.NaN : f(x) / f(y);
}

/** `value / Kafka Connect's value`, or NaN without a Connect figure. */
export function ratio(summaries: readonly Summary[], s: Summary, f: (s: Summary) => number): number {
  const connect = summaries.find((x) => x.contender === 'connect');
  return connect === undefined ? Number.NaN : f(s) / f(connect);
}
