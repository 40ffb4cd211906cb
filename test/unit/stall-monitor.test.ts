import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StallMonitor } from '../../src/kafka/stall-monitor.js';
import type { SenderStall } from '../../src/runtime/ports.js';

const T0 = 1_700_000_000_000;

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

function setup() {
  const probe = { waiting: 0, dispatchedAt: undefined as number | undefined };
  const errors: Error[] = [];
  const monitor = new StallMonitor(30_000, { pending: () => probe.waiting, oldestDispatchedAt: () => probe.dispatchedAt }, (e) =>
    errors.push(e),
  );
  const reports: Array<SenderStall | undefined> = [];
  monitor.listen((s) => reports.push(s));
  return { probe, monitor, reports, errors };
}

describe('StallMonitor', () => {
  it('reports a stall the sender notes at once, again every 5 s while records wait, and its end on recovery', () => {
    const { probe, monitor, reports } = setup();
    probe.waiting = 10;
    monitor.stall(T0 - 2000, 'connection refused', T0);
    expect(reports).toEqual([{ since: T0 - 2000, durationMs: 2000, reason: 'connection refused' }]);
    monitor.stall(T0, 'leader not available', T0);
    expect(reports).toHaveLength(1);
    vi.advanceTimersByTime(5000);
    expect(reports[1]).toEqual({ since: T0 - 2000, durationMs: 7000, reason: 'leader not available' });
    monitor.recovered();
    expect(reports.at(-1)).toBeUndefined();
    expect(reports).toHaveLength(3);
    monitor.recovered();
    expect(reports).toHaveLength(3);
  });

  it('notices a request unanswered for request.timeout.ms, as with a frozen broker', () => {
    const { probe, monitor, reports } = setup();
    probe.waiting = 1;
    probe.dispatchedAt = T0;
    monitor.watch();
    vi.advanceTimersByTime(29_000);
    expect(reports).toEqual([]);
    vi.advanceTimersByTime(1000);
    expect(reports).toEqual([{ since: T0, durationMs: 30_000, reason: 'no answer from Kafka within request.timeout.ms=30000' }]);
  });

  it('ends a stall when no record waits any more, and then stops its timer', () => {
    const { probe, monitor, reports } = setup();
    probe.waiting = 1;
    monitor.stall(T0, 'broker down', T0);
    probe.waiting = 0;
    vi.advanceTimersByTime(1000);
    expect(reports).toEqual([{ since: T0, durationMs: 0, reason: 'broker down' }, undefined]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('hands what a listener throws to onAsyncError and still tells the other listeners', () => {
    const { monitor, reports, errors } = setup();
    monitor.listen(() => {
      throw new Error('listener broke');
    });
    const later: Array<SenderStall | undefined> = [];
    monitor.listen((s) => later.push(s));
    monitor.stall(T0, 'x', T0);
    expect(errors.map((e) => e.message)).toEqual(['listener broke']);
    expect(reports).toHaveLength(1);
    expect(later).toHaveLength(1);
  });

  it('runs no timer after stop()', () => {
    const { probe, monitor } = setup();
    probe.waiting = 1;
    monitor.watch();
    monitor.stop();
    monitor.watch();
    monitor.stall(T0, 'x', T0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
