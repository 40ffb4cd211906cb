import * as t from 'io-ts';
import { defer, EMPTY, type Observable, of } from 'rxjs';
import {
  configTypes,
  defineConfig,
  offsetCodec,
  SourceConnector,
  type SourceRecord,
  SourceTask,
  type SourceTaskContext,
} from 'tributary-connect';

const config = defineConfig({
  topic: { type: configTypes.string, description: 'Data topic.' },
  'start.delay.ms': { type: configTypes.nonNegativeInt, default: 3000, description: 'How long start() takes.' },
});
type Config = { topic: string; 'start.delay.ms': number };
type P = { source: string };
type O = { i: number };

/** A task whose start() takes `start.delay.ms` (a slow database connection), then writes one record. */
export class SlowStartTask extends SourceTask<P, O, Config> {
  readonly offsets = offsetCodec({ partition: t.type({ source: t.string }), offset: t.type({ i: t.number }) });
  private config!: Config;
  private sent = false;
  async start(c: Config, context: SourceTaskContext<P, O>): Promise<void> {
    this.config = c;
    await context.clock.sleep(c['start.delay.ms']);
  }
  poll(): Observable<SourceRecord<P, O>> {
    return defer(() => {
      if (this.sent) return EMPTY;
      this.sent = true;
      return of({ sourcePartition: { source: 'slow' }, sourceOffset: { i: 1 }, topic: this.config.topic, value: { i: 1 } });
    });
  }
}

/** The connector of {@link SlowStartTask}. */
export class SlowStartConnector extends SourceConnector<Config, Config> {
  readonly config = config;
  readonly taskClass = SlowStartTask;
  taskConfigs(_maxTasks: number, c: Config): Config[] {
    return [c];
  }
}
