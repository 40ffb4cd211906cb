import { type Clock, systemClock } from '../api/clock.js';
import type { WorkerMetrics } from './worker-metrics.js';

/** One sample of one task's freshness and throughput. */
export interface TaskSample {
  /** Epoch ms. */
  readonly t: number;
  /** Seconds since the committed offset last advanced. */
  readonly offsetAge: number;
  /** The source lag position, when the task reports one. */
  readonly lag: number | null;
  /** Data records written per second since the previous sample (null for the first). */
  readonly rate: number | null;
  /** Seconds since the last heartbeat record (null before the first). */
  readonly heartbeatAge: number | null;
}

/** Options of {@link MetricsHistory}. */
export interface MetricsHistoryOptions {
  /** Between samples, in ms; default 10 000. */
  readonly intervalMs?: number;
  /** Samples kept per task; default 360 (an hour at the default interval). */
  readonly size?: number;
  readonly clock?: Clock;
}

interface Track {
  readonly samples: TaskSample[];
  lastWritten: number;
  lastAt: number;
}

/**
 * Samples every task's offset age, source lag, throughput and heartbeat age on an interval and
 * keeps the last hour, for the status page's charts. Bounded: `size` samples per task, and
 * tasks that are gone are dropped.
 *
 * @example
 * ```ts
 * import { WorkerMetrics } from './worker-metrics.js';
 *
 * const metrics = new WorkerMetrics();
 * const history = new MetricsHistory(metrics, { intervalMs: 10_000 });
 * history.start();
 * // ... later
 * history.stop();
 * ```
 */
export class MetricsHistory {
  private readonly tracks = new Map<string, Track>();
  private timer: NodeJS.Timeout | undefined;
  private readonly intervalMs: number;
  private readonly size: number;
  private readonly clock: Clock;

  constructor(
    private readonly metrics: WorkerMetrics,
    options: MetricsHistoryOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 10_000;
    this.size = options.size ?? 360;
    this.clock = options.clock ?? systemClock;
  }

  /** Takes a sample now and then every interval (the timer does not keep the process alive). */
  start(): void {
    if (this.timer) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Takes one sample of every task. */
  sample(): void {
    const now = this.clock.now();
    const live = new Set<string>();
    for (const c of this.metrics.view()) {
      for (const t of c.tasks) {
        const s = t.metrics;
        if (s === undefined) continue;
        const key = `${t.connector}\u0000${t.taskId}`;
        live.add(key);
        let track = this.tracks.get(key);
        // A restarted task counts from 0 again: no rate across the restart.
        if (track !== undefined && s.writeTotal < track.lastWritten) track = undefined;
        const rate = track && now > track.lastAt ? ((s.writeTotal - track.lastWritten) * 1000) / (now - track.lastAt) : null;
        const samples = track?.samples ?? [];
        samples.push({
          t: now,
          offsetAge: s.offsetAgeMs / 1000,
          lag: s.sourceLag?.position ?? null,
          rate,
          heartbeatAge: s.heartbeatLastTimestamp === undefined ? null : (now - s.heartbeatLastTimestamp) / 1000,
        });
        if (samples.length > this.size) samples.splice(0, samples.length - this.size);
        this.tracks.set(key, { samples, lastWritten: s.writeTotal, lastAt: now });
      }
    }
    for (const key of this.tracks.keys()) if (!live.has(key)) this.tracks.delete(key);
  }

  /** The samples of one task, oldest first. */
  task(connector: string, taskId: number): readonly TaskSample[] {
    return this.tracks.get(`${connector}\u0000${taskId}`)?.samples ?? [];
  }
}
