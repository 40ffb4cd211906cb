import { configTypes, defineConfig, SourceConnector } from 'tributary-connect';
import { SlowStartTask } from './slow-start-connector.js';

const config = defineConfig({
  topic: { type: configTypes.string, description: 'Data topic.' },
  'start.delay.ms': { type: configTypes.nonNegativeInt, default: 3000, description: 'How long start() takes before it fails.' },
});
type Config = { topic: string; 'start.delay.ms': number };

/** A connector whose start() fails after `start.delay.ms` (a source that turns out unreachable); its task is {@link SlowStartTask}. */
export class FailingStartConnector extends SourceConnector<Config, Config> {
  readonly config = config;
  readonly taskClass = SlowStartTask;
  override async start(c: Config): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, c['start.delay.ms']));
    throw new Error(`the source behind ${c.topic} cannot be reached`);
  }
  taskConfigs(_maxTasks: number, c: Config): Config[] {
    return [c];
  }
}
