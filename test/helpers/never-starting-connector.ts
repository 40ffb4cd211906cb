import { configTypes, defineConfig, SourceConnector } from 'tributary-connect';
import { SlowStartTask } from './slow-start-connector.js';

const config = defineConfig({
  topic: { type: configTypes.string, description: 'Data topic.' },
  'start.delay.ms': { type: configTypes.nonNegativeInt, default: 0, description: 'Unused: start() never ends.' },
});
type Config = { topic: string; 'start.delay.ms': number };

/** A connector whose start() never resolves (a source that hangs, retrying, without a timeout): the worker's start-up is stuck in it. */
export class NeverStartingConnector extends SourceConnector<Config, Config> {
  readonly config = config;
  readonly taskClass = SlowStartTask;
  override start(): Promise<void> {
    // As a client retrying a connection forever: a timer keeps the process alive meanwhile.
    return new Promise<void>(() => {
      setInterval(() => {}, 1000);
    });
  }
  taskConfigs(_maxTasks: number, c: Config): Config[] {
    return [c];
  }
}
