/**
 * The synthetic source of the partitions series: one task that writes records as fast as the
 * pipeline takes them, cycling through `partitions` source partitions (record i belongs to
 * partition i mod N), so every record moves a different partition's offset than the one before
 * it: the offset tracking's cost with N partitions per task. Values are `record.size` bytes of
 * text (`value.converter=string`), keys null, like the file source's lines. The offset of a
 * partition is how many records it has had, so the committed offsets add up to the records
 * written. It starts from nothing every time (each bench run has a fresh offsets file).
 *
 * Built into bench/.work/build/synthetic-source.js by bench/lib/build.ts, with its own copy of
 * the connector API, as a connector package would be.
 */
import * as t from 'io-ts';
import { defer, from, type Observable } from 'rxjs';
import {
  type ConfigType,
  configTypes,
  defineConfig,
  offsetCodec,
  SourceConnector,
  type SourceRecord,
  SourceTask,
} from 'tributary-connect';

const config = defineConfig({
  topic: { type: configTypes.string, description: 'Topic the records go to.' },
  partitions: { type: configTypes.positiveInt, default: 1, description: 'Source partitions the task cycles through.' },
  'record.size': { type: configTypes.positiveInt, default: 100, description: 'Bytes of each value.' },
  'max.records': { type: configTypes.int, default: -1, description: 'Records to write, then idle; -1 for no limit.' },
  'batch.size': { type: configTypes.positiveInt, default: 2000, description: 'Most records per poll round.' },
});

/** The decoded config of the synthetic connector. */
export type SyntheticConfig = ConfigType<typeof config>;
/** A synthetic source partition. */
export type SyntheticPartition = { p: number };
/** Records written to a partition so far. */
export type SyntheticOffset = { seq: number };

/** Cycles through its partitions, one record each in turn, until `max.records`. */
export class SyntheticTask extends SourceTask<SyntheticPartition, SyntheticOffset, SyntheticConfig> {
  readonly offsets = offsetCodec({ partition: t.type({ p: t.number }), offset: t.type({ seq: t.number }) });
  private config!: SyntheticConfig;
  /** One object per partition, reused by its records (as the file source reuses its file's). */
  private partitions: SyntheticPartition[] = [];
  private seqs: number[] = [];
  private written = 0;
  private value = '';

  start(config: SyntheticConfig): void {
    this.config = config;
    this.partitions = Array.from({ length: config.partitions }, (_, p) => ({ p }));
    this.seqs = new Array<number>(config.partitions).fill(0);
    this.value = 'x'.repeat(config['record.size']);
  }

  poll(): Observable<SourceRecord<SyntheticPartition, SyntheticOffset>> {
    return defer(() => from(this.next()));
  }

  private next(): SourceRecord<SyntheticPartition, SyntheticOffset>[] {
    const limit = this.config['max.records'];
    const n = limit < 0 ? this.config['batch.size'] : Math.min(this.config['batch.size'], limit - this.written);
    const out = new Array<SourceRecord<SyntheticPartition, SyntheticOffset>>(Math.max(0, n));
    const count = this.partitions.length;
    for (let i = 0; i < n; i++) {
      const index = (this.written + i) % count;
      const seq = (this.seqs[index] as number) + 1;
      this.seqs[index] = seq;
      out[i] = {
        sourcePartition: this.partitions[index] as SyntheticPartition,
        sourceOffset: { seq },
        topic: this.config.topic,
        key: null,
        value: this.value,
      };
    }
    this.written += Math.max(0, n);
    return out;
  }
}

/** The synthetic connector: one task (`tasks.max` is ignored beyond 1). */
export class SyntheticConnector extends SourceConnector<SyntheticConfig, SyntheticConfig, SyntheticPartition, SyntheticOffset> {
  readonly config = config;
  readonly taskClass = SyntheticTask;
  override readonly version = '0.1.0';

  taskConfigs(_maxTasks: number, config: SyntheticConfig): SyntheticConfig[] {
    return [config];
  }
}
