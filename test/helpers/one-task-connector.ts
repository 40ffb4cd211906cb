import { configTypes, defineConfig } from '../../src/api/config-def.js';
import { SourceConnector } from '../../src/api/source-connector.js';
import { FixtureTask } from './fixture-connector.js';

/** A connector of one {@link FixtureTask} writing `count` records to `topic`: the tests of task launch, restart and cancel. */
export class OneTaskConnector extends SourceConnector<{ topic: string; count: number }, { topic: string; count: number }> {
  readonly config = defineConfig({
    topic: { type: configTypes.string, description: 'Data topic.' },
    count: { type: configTypes.positiveInt, default: 1, description: 'Records to produce.' },
  });
  readonly taskClass = FixtureTask;
  taskConfigs(_maxTasks: number, c: { topic: string; count: number }) {
    return [{ ...c }];
  }
}
