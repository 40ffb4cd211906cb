import { MockRuntime } from 'tributary-connect/testing';
import { describe, expect, it } from 'vitest';
import { type ChangesConfig, ChangesTask, SimulatedChangeSource } from '../src/index.js';

const config: ChangesConfig = {
  topic: 'changes',
  'source.name': 'orders-db',
  'batch.size': 500,
  'buffer.capacity': 100,
  'simulated.changes': 3,
  'simulated.interval.ms': 100,
};

describe('ChangesTask', () => {
  it('keeps its offset moving with heartbeats while idle, and lets the source free only what was committed', async () => {
    let source: SimulatedChangeSource | undefined;
    const run = await MockRuntime.start(
      () =>
        new ChangesTask((cfg, clock) => {
          source = new SimulatedChangeSource({
            scheduler: clock.scheduler,
            changes: 3,
            intervalMs: cfg['simulated.interval.ms'],
          });
          return source;
        }),
      {
        config,
        connectorConfig: { 'heartbeat.interval.ms': 1000, 'heartbeat.topic': 'beats' },
        workerConfig: { 'offset.flush.interval.ms': 5000 },
      },
    );
    await run.advanceBy('10s');
    expect(run.records('changes').map((r) => r.sourceOffset.position)).toEqual([10, 20, 30]);
    expect(run.records('beats').length).toBeGreaterThan(5);
    const committed = await run.committedOffset({ source: 'orders-db' });
    // Idle after 300 ms, yet the committed position went far past the last change.
    expect(committed?.position).toBeGreaterThan(500);
    expect(source?.acknowledged).toBe(committed?.position);
    await run.stop();
  });
});
