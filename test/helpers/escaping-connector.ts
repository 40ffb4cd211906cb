import * as t from 'io-ts';
import { EMPTY, type Observable } from 'rxjs';
import { configTypes, defineConfig, offsetCodec, SourceConnector, type SourceRecord, SourceTask } from 'tributary-connect';

const config = defineConfig({
  topic: { type: configTypes.string, description: 'Data topic.' },
});
type Config = { topic: string };
type P = { source: string };
type O = { i: number };

/**
 * A buggy task: once started it throws from a timer callback and leaves a promise rejected with
 * no handler, both outside the runtime's pipeline (as a driver's event emitter or a forgotten
 * `void promise` would).
 */
export class EscapingTask extends SourceTask<P, O, Config> {
  readonly offsets = offsetCodec({ partition: t.type({ source: t.string }), offset: t.type({ i: t.number }) });
  start(): void {
    setTimeout(() => {
      throw new Error('thrown from a timer of the escaping task');
    }, 200);
    setTimeout(() => {
      void Promise.reject(new Error('rejected with no handler by the escaping task'));
    }, 300);
  }
  poll(): Observable<SourceRecord<P, O>> {
    return EMPTY;
  }
}

/** The connector of {@link EscapingTask}. */
export class EscapingConnector extends SourceConnector<Config, Config> {
  readonly config = config;
  readonly taskClass = EscapingTask;
  taskConfigs(_maxTasks: number, c: Config): Config[] {
    return [c];
  }
}
