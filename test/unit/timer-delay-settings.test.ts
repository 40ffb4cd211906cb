/**
 * Settings used as a timer delay are refused above 2147483647 ms, which Node.js would fire
 * after 1 ms: transaction.boundary.interval.ms and the distributed worker's timers (task and
 * worker settings: task-settings.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { resolveMetricsSettings } from '../../src/metrics/worker-metrics.js';
import { resolveRestOptions } from '../../src/rest/rest-options.js';
import { resolveDistributedSettings } from '../../src/runtime/distributed/distributed-settings.js';
import { exactlyOnceProblems, resolveTransactionSettings } from '../../src/runtime/exactly-once-settings.js';
import { MAX_TIMER_DELAY_MS } from '../../src/runtime/task-settings.js';

const TOO_LONG = MAX_TIMER_DELAY_MS + 1;

const base = {
  'bootstrap.servers': '127.0.0.1:9092',
  'group.id': 'connect-cluster',
  'config.storage.topic': 'connect-configs',
  'offset.storage.topic': 'connect-offsets',
  'status.storage.topic': 'connect-status',
};

const overflow = (key: string, range: string) =>
  `Invalid configuration ${key}: expected integer from ${range}, got ${TOO_LONG}: it is a timer delay in milliseconds, and Node.js fires a timer longer than 2147483647 ms (about 24.8 days) after 1 ms instead`;

describe('timer delays above 2147483647 ms', () => {
  it('is the largest delay Node.js honours', () => {
    expect(MAX_TIMER_DELAY_MS).toBe(2 ** 31 - 1);
  });

  it.each([
    ['session.timeout.ms', '1 to 2147483647'],
    ['heartbeat.interval.ms', '1 to 2147483647'],
    ['rebalance.timeout.ms', '1 to 2147483647'],
    ['scheduled.rebalance.max.delay.ms', "0 to 2147483647 (0: a leaving worker's work moves at once)"],
    ['rest.leader.wait.ms', '1 to 2147483647'],
  ])('refuses distributed %s above it, naming key, range and why', (key, range) => {
    // The largest session timeout, so that the heartbeat check does not get in the way.
    const config = { ...base, 'session.timeout.ms': String(MAX_TIMER_DELAY_MS), [key]: String(TOO_LONG) };
    expect(() => resolveDistributedSettings(config, 'worker config w.properties')).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID', problems: expect.arrayContaining([overflow(key, range)]) }),
    );
    expect(() => resolveDistributedSettings(config, 'worker config w.properties')).toThrow(
      /^Invalid worker config w\.properties: /,
    );
  });

  it('accepts every distributed timer at exactly 2147483647 ms', () => {
    const max = String(MAX_TIMER_DELAY_MS);
    const settings = resolveDistributedSettings(
      {
        ...base,
        'session.timeout.ms': max,
        'heartbeat.interval.ms': String(MAX_TIMER_DELAY_MS - 1),
        'rebalance.timeout.ms': max,
        'scheduled.rebalance.max.delay.ms': max,
        'rest.leader.wait.ms': max,
      },
      'worker config',
    );
    expect(settings).toMatchObject({
      sessionTimeoutMs: MAX_TIMER_DELAY_MS,
      rebalanceTimeoutMs: MAX_TIMER_DELAY_MS,
      maxDelayMs: MAX_TIMER_DELAY_MS,
      leaderWaitMs: MAX_TIMER_DELAY_MS,
    });
  });

  const enabled = { 'exactly.once.source.support': 'enabled' };
  const interval = (ms: number) => ({ 'transaction.boundary': 'interval', 'transaction.boundary.interval.ms': String(ms) });

  it('refuses transaction.boundary.interval.ms above it at create and validate', () => {
    const problems = exactlyOnceProblems(new DatagenConnector(), undefined, interval(TOO_LONG), enabled);
    expect(problems).toEqual([
      { key: 'transaction.boundary.interval.ms', message: overflow('transaction.boundary.interval.ms', '1 to 2147483647') },
    ]);
    expect(exactlyOnceProblems(new DatagenConnector(), undefined, interval(MAX_TIMER_DELAY_MS), enabled)).toEqual([]);
  });

  it('refuses transaction.boundary.interval.ms above it when a task resolves its transactions', () => {
    expect(() => resolveTransactionSettings(enabled, interval(TOO_LONG))).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        problems: [overflow('transaction.boundary.interval.ms', '1 to 2147483647')],
      }),
    );
    expect(resolveTransactionSettings(enabled, interval(MAX_TIMER_DELAY_MS))).toEqual({
      boundary: 'interval',
      intervalMs: MAX_TIMER_DELAY_MS,
    });
  });
});

describe('REST and metrics timers', () => {
  it('refuses rest.request.timeout.ms and metrics.history.interval.ms above 2^31-1 ms, and takes the limit', async () => {
    await expect(resolveRestOptions({ 'rest.request.timeout.ms': '2147483648' })).rejects.toMatchObject({
      problems: [expect.stringContaining('Invalid configuration rest.request.timeout.ms: expected integer from 1 to 2147483647')],
    });
    expect(await resolveRestOptions({ 'rest.request.timeout.ms': '2147483647' })).toMatchObject({ requestTimeoutMs: 2147483647 });
    expect(() => resolveMetricsSettings({ 'metrics.history.interval.ms': '3000000000' })).toThrow(
      /metrics.history.interval.ms: expected integer from 1 to 2147483647/,
    );
    expect(resolveMetricsSettings({ 'metrics.history.interval.ms': '2147483647' }).historyIntervalMs).toBe(2147483647);
  });
});
