import { SourceConnector } from 'tributary-connect';
import type { CdcOffset, CdcPartition } from './cdc-offsets.js';
import { type PostgresCdcConfig, parseTables, postgresCdcConfig } from './postgres-cdc-config.js';
import { PostgresCdcTask } from './postgres-cdc-task.js';

/**
 * PostgreSQL change data capture over logical replication (pgoutput). One task: a
 * replication slot has one reader.
 *
 * @example
 * ```properties
 * name=shop-cdc
 * connector.class=./examples/postgres-cdc/src/index.ts#PostgresCdcConnector
 * connection.string=postgresql://cdc@db:5432/shop
 * tables=public.orders,public.customers
 * topic.prefix=shop
 * heartbeat.interval.ms=10000
 * ```
 */
export class PostgresCdcConnector extends SourceConnector<PostgresCdcConfig, PostgresCdcConfig, CdcPartition, CdcOffset> {
  readonly config = postgresCdcConfig;
  readonly taskClass = PostgresCdcTask;
  override readonly version = '0.1.0';

  override start(config: PostgresCdcConfig): void {
    parseTables(config.tables);
  }

  /** Always one task, whatever `tasks.max` says: a slot is read by one connection. */
  taskConfigs(_maxTasks: number, config: PostgresCdcConfig): PostgresCdcConfig[] {
    return [config];
  }
}
