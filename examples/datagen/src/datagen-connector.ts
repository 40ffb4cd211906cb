import * as t from 'io-ts';
import { defer, from, type Observable } from 'rxjs';
import {
  type ConfigType,
  configTypes,
  defineConfig,
  type ExactlyOnceSupport,
  type HeartbeatRecord,
  offsetCodec,
  SourceConnector,
  type SourceRecord,
  SourceTask,
  type SourceTaskContext,
} from 'tributary-connect';

const config = defineConfig({
  topic: { type: configTypes.string, description: 'Topic the records go to.' },
  rate: {
    type: configTypes.nonNegativeInt,
    default: 10,
    description: 'Records per second per task; 0 produces as fast as the pipeline takes them.',
  },
  'record.size': { type: configTypes.positiveInt, default: 100, description: 'Approximate bytes of each JSON value.' },
  partitions: {
    type: configTypes.positiveInt,
    default: 1,
    description: 'Source partitions per task, each with its own sequence.',
  },
  'max.records': {
    type: configTypes.int,
    default: -1,
    description:
      'Records per task, counted from the committed offsets (so across restarts), after which it goes idle while heartbeats keep coming; -1 for no limit.',
  },
  'batch.size': { type: configTypes.positiveInt, default: 1000, description: 'Most records per poll round.' },
});

/** The decoded config of the datagen connector. */
export type DatagenConfig = ConfigType<typeof config>;
/** One task's share of the work. */
export type DatagenTaskConfig = DatagenConfig & { task: number };
/** A datagen source partition: one sequence. */
export type DatagenPartition = { task: number; sequence: number };
/** How far a sequence got: the last number written. */
export type DatagenOffset = { seq: number };

/**
 * A synthetic source for demos and benchmarks: numbered records at a fixed rate across a
 * number of source partitions, resuming after the last committed number, with heartbeats
 * that carry each sequence's position while it is idle.
 */
export class DatagenTask extends SourceTask<DatagenPartition, DatagenOffset, DatagenTaskConfig> {
  readonly offsets = offsetCodec({
    partition: t.type({ task: t.number, sequence: t.number }),
    offset: t.type({ seq: t.number }),
  });
  private config!: DatagenTaskConfig;
  private context!: SourceTaskContext<DatagenPartition, DatagenOffset>;
  private partitions: DatagenPartition[] = [];
  private positions: number[] = [];
  /** Records written by this task, across restarts: the sum of its sequences' positions. */
  private total = 0;
  /** Records written since this start, for the rate. */
  private producedHere = 0;
  private startedAt = 0;
  private padding = '';

  async start(config: DatagenTaskConfig, context: SourceTaskContext<DatagenPartition, DatagenOffset>): Promise<void> {
    this.config = config;
    this.context = context;
    this.startedAt = context.clock.now();
    const bare = JSON.stringify({ task: config.task, sequence: 0, seq: 1_000_000, payload: '' }).length;
    this.padding = 'x'.repeat(Math.max(0, config['record.size'] - bare));
    for (let sequence = 0; sequence < config.partitions; sequence++) {
      const partition = { task: config.task, sequence };
      this.partitions.push(partition);
      this.positions.push((await context.offsets.offset(partition))?.seq ?? 0);
    }
    this.total = this.positions.reduce((a, b) => a + b, 0);
  }

  poll(): Observable<SourceRecord<DatagenPartition, DatagenOffset>> {
    return defer(() => from(this.next()));
  }

  override produceHeartbeatRecords(): Observable<HeartbeatRecord<DatagenPartition, DatagenOffset>> {
    const now = this.context.clock.now();
    return from(
      this.partitions.map((partition, i) => ({
        sourcePartition: partition,
        sourceOffset: { seq: this.positions[i] as number },
        key: `${partition.task}-${partition.sequence}`,
        value: { heartbeat: now, seq: this.positions[i] },
      })),
    );
  }

  private next(): SourceRecord<DatagenPartition, DatagenOffset>[] {
    const { rate, topic } = this.config;
    const limit = this.config['max.records'];
    let due = this.config['batch.size'];
    if (rate > 0)
      due = Math.min(due, Math.floor(((this.context.clock.now() - this.startedAt) * rate) / 1000) - this.producedHere);
    if (limit >= 0) due = Math.min(due, limit - this.total);
    const out: SourceRecord<DatagenPartition, DatagenOffset>[] = [];
    for (let i = 0; i < due; i++) {
      const index = (this.total + i) % this.partitions.length;
      const partition = this.partitions[index] as DatagenPartition;
      const seq = (this.positions[index] as number) + 1;
      this.positions[index] = seq;
      out.push({
        sourcePartition: partition,
        sourceOffset: { seq },
        topic,
        key: `${partition.task}-${partition.sequence}`,
        value: { task: partition.task, sequence: partition.sequence, seq, payload: this.padding },
      });
    }
    this.producedHere += Math.max(0, due);
    this.total += Math.max(0, due);
    return out;
  }
}

/** The datagen connector: `tasks.max` tasks, each with `partitions` sequences. */
export class DatagenConnector extends SourceConnector<DatagenConfig, DatagenTaskConfig, DatagenPartition, DatagenOffset> {
  readonly config = config;
  readonly taskClass = DatagenTask;
  override readonly version = '0.1.0';

  taskConfigs(maxTasks: number, config: DatagenConfig): DatagenTaskConfig[] {
    return Array.from({ length: maxTasks }, (_, task) => ({ ...config, task }));
  }

  /** Each sequence resumes right after its committed number, so exactly-once delivery holds (KIP-618). */
  override exactlyOnceSupport(): ExactlyOnceSupport | undefined {
    return 'supported';
  }
}
