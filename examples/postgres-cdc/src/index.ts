/**
 * PostgreSQL CDC source for Tributary: row changes of chosen tables from a pgoutput logical
 * replication slot, with heartbeats that let the server free its WAL while those tables are idle.
 *
 * ```properties
 * connector.class=./examples/postgres-cdc/src/index.ts#PostgresCdcConnector
 * tables=public.orders
 * topic.prefix=shop
 * ```
 * @module
 */
export { type CdcOffset, type CdcPartition, cdcOffsets } from './cdc-offsets.js';
export { type PostgresCdcConfig, postgresCdcConfig } from './postgres-cdc-config.js';
export { PostgresCdcConnector } from './postgres-cdc-connector.js';
export { type ChangeValue, type HeartbeatValue, PostgresCdcTask } from './postgres-cdc-task.js';
