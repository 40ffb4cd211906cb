import { SourceConnector } from 'tributary-connect';
import { type ItemsConfig, itemsConfig } from './items-config.js';
import { type ItemsOffset, type ItemsPartition, ItemsTask } from './items-task.js';

/** Polls an API for new items. One cursor, so one task whatever `tasks.max` says. */
export class ItemsConnector extends SourceConnector<ItemsConfig, ItemsConfig, ItemsPartition, ItemsOffset> {
  readonly config = itemsConfig;
  readonly taskClass = ItemsTask;
  override readonly version = '0.1.0';

  taskConfigs(_maxTasks: number, config: ItemsConfig): ItemsConfig[] {
    return [config];
  }
}
