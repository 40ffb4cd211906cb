import { SourceConnector } from 'tributary-connect';
import { type ChangesConfig, changesConfig } from './changes-config.js';
import { type ChangesOffset, type ChangesPartition, ChangesTask } from './changes-task.js';

/** Streams a change log into a topic. One log, so one task whatever `tasks.max` says. */
export class ChangesConnector extends SourceConnector<ChangesConfig, ChangesConfig, ChangesPartition, ChangesOffset> {
  readonly config = changesConfig;
  readonly taskClass = ChangesTask;
  override readonly version = '0.1.0';

  taskConfigs(_maxTasks: number, config: ChangesConfig): ChangesConfig[] {
    return [config];
  }
}
