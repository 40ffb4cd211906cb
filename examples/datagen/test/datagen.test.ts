import { MockRuntime } from 'tributary-connect/testing';
import { describe, expect, it } from 'vitest';
import { DatagenConnector, DatagenTask, type DatagenTaskConfig } from '../src/index.js';

const taskConfig = (extra: Partial<DatagenTaskConfig> = {}): DatagenTaskConfig => ({
  topic: 'gen',
  rate: 10,
  'record.size': 100,
  partitions: 2,
  'max.records': -1,
  'batch.size': 1000,
  task: 0,
  ...extra,
});

describe('datagen', () => {
  it('produces at the configured rate, spread over its source partitions', async () => {
    const run = await MockRuntime.start(DatagenTask, { config: taskConfig({ rate: 10 }) });
    await run.advanceBy('10s');
    const records = run.records('gen');
    expect(records.length).toBeGreaterThanOrEqual(99);
    expect(records.length).toBeLessThanOrEqual(100);
    expect(new Set(records.map((r) => r.sourcePartition.sequence))).toEqual(new Set([0, 1]));
    expect(JSON.stringify(records[0]?.value).length).toBeGreaterThan(90);
    await run.stop();
  });

  it('resumes each sequence after its committed number, with no gap and no repeat', async () => {
    const run = await MockRuntime.start(DatagenTask, {
      config: taskConfig({ rate: 0, 'max.records': 53 }),
      committedOffsets: [
        { partition: { task: 0, sequence: 0 }, offset: { seq: 40 } },
        { partition: { task: 0, sequence: 1 }, offset: { seq: 7 } },
      ],
    });
    await run.advanceBy('1s');
    const seqs = (s: number) => run.dataRecords.filter((r) => r.sourcePartition.sequence === s).map((r) => r.sourceOffset.seq);
    expect(seqs(0)).toEqual([41, 42, 43]);
    expect(seqs(1)).toEqual([8, 9, 10]);
    await run.stop();
  });

  it('keeps heartbeats with its current position coming while idle', async () => {
    const run = await MockRuntime.start(DatagenTask, {
      config: taskConfig({ rate: 0, 'max.records': 4 }),
      connectorConfig: { 'heartbeat.interval.ms': 1000, 'heartbeat.topic': 'beats' },
      workerConfig: { 'offset.flush.interval.ms': 5000 },
    });
    await run.advanceBy('5s');
    expect(run.dataRecords).toHaveLength(4);
    expect(run.records('beats')).toHaveLength(10);
    expect(run.records('beats').at(-1)?.sourceOffset).toEqual({ seq: 2 });
    expect(await run.committedOffsets()).toEqual([
      { partition: { task: 0, sequence: 0 }, offset: { seq: 2 } },
      { partition: { task: 0, sequence: 1 }, offset: { seq: 2 } },
    ]);
    await run.stop();
  });

  it('splits into tasks.max tasks and rejects a bad config', () => {
    const connector = new DatagenConnector();
    const parsed = connector.config.parse({ topic: 't', partitions: '3' });
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) throw new Error('should parse');
    expect(connector.taskConfigs(3, parsed.value).map((c) => c.task)).toEqual([0, 1, 2]);
    const bad = connector.config.parse({ rate: '-1' });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.problems.map((p) => p.key).sort()).toEqual(['rate', 'topic']);
  });
});
