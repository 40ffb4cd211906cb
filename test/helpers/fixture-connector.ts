import * as t from 'io-ts';
import { defer, from, type Observable, of } from 'rxjs';
import {
  configTypes,
  defineConfig,
  type HeartbeatRecord,
  offsetCodec,
  SourceConnector,
  type SourceRecord,
  SourceTask,
} from 'tributary-connect';

const config = defineConfig({
  topic: { type: configTypes.string, description: 'Data topic.' },
  count: { type: configTypes.positiveInt, default: 10, description: 'Records to produce.' },
});
type Config = { topic: string; count: number };
type P = { source: string };
type O = { i: number };

/** Emits `count` records with keys, headers, explicit Kafka partitions and timestamps, then heartbeats. */
export class FixtureTask extends SourceTask<P, O, Config> {
  readonly offsets = offsetCodec({ partition: t.type({ source: t.string }), offset: t.type({ i: t.number }) });
  private config!: Config;
  private next = 0;
  start(c: Config): void {
    this.config = c;
  }
  poll(): Observable<SourceRecord<P, O>> {
    return defer(() => {
      const out: SourceRecord<P, O>[] = [];
      for (; this.next < this.config.count; this.next++) {
        const i = this.next;
        out.push({
          sourcePartition: { source: 'fixture' },
          sourceOffset: { i },
          topic: this.config.topic,
          kafkaPartition: i % 2,
          key: { id: i },
          value: { i, text: `record ${i}` },
          headers: { 'x-index': String(i), 'x-bytes': Buffer.from([i]) },
          timestamp: 1_700_000_000_000 + i,
        });
      }
      return from(out);
    });
  }
  override produceHeartbeatRecords(): Observable<HeartbeatRecord<P, O>> {
    return of({
      sourcePartition: { source: 'fixture' },
      sourceOffset: { i: this.next },
      key: 'fixture',
      value: { heartbeat: true },
    });
  }
}

/** The connector of {@link FixtureTask}. */
export class FixtureConnector extends SourceConnector<Config, Config> {
  readonly config = config;
  readonly taskClass = FixtureTask;
  taskConfigs(_maxTasks: number, c: Config): Config[] {
    return [c];
  }
}
