import { MockRuntime } from 'tributary-connect/testing';
import { describe, expect, it } from 'vitest';
import { DatagenTask, type DatagenTaskConfig, IsSequence, SampleTransform } from '../src/index.js';

const taskConfig: DatagenTaskConfig = {
  topic: 'gen',
  rate: 0,
  'record.size': 10,
  partitions: 2,
  'max.records': 20,
  'batch.size': 1000,
  task: 0,
};

describe('SampleTransform', () => {
  it('keeps one record in `every` of the sequence its predicate picks, and commits past the dropped ones', async () => {
    const run = await MockRuntime.start(DatagenTask, {
      config: taskConfig,
      connectorConfig: {
        transforms: 'sample',
        'transforms.sample.type': 'SampleTransform',
        'transforms.sample.every': '5',
        'transforms.sample.predicate': 'first',
        predicates: 'first',
        'predicates.first.type': 'IsSequence',
        'predicates.first.sequence': '0',
      },
      plugins: { SampleTransform, IsSequence },
    });
    await run.advanceBy('1s');
    const seqs = (s: number) => run.dataRecords.filter((r) => r.sourcePartition.sequence === s).map((r) => r.sourceOffset.seq);
    expect(seqs(0)).toEqual([5, 10]);
    expect(seqs(1)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    await run.flush();
    expect(await run.committedOffset({ task: 0, sequence: 0 })).toEqual({ seq: 10 });
    await run.stop();
  });

  it('refuses an `every` below 1, naming the key', async () => {
    await expect(
      MockRuntime.start(DatagenTask, {
        config: taskConfig,
        connectorConfig: { transforms: 'sample', 'transforms.sample.type': 'SampleTransform', 'transforms.sample.every': '0' },
        plugins: { SampleTransform },
      }),
    ).rejects.toThrow(/transforms\.sample\.every/);
  });
});
