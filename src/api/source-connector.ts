import type { ConfigDef } from './config-def.js';
import type { Logger } from './logger.js';
import type { SourceTaskClass } from './source-task.js';
import type { ConnectorTransactionBoundaries, ExactlyOnceSupport } from './transaction-context.js';

const CONNECTOR_BRAND = Symbol.for('tributary.source-connector');

/** What the runtime gives a connector at start. */
export interface ConnectorContext {
  /** The connector's name. */
  readonly name: string;
  readonly logger: Logger;
  /** Asks the runtime to call `taskConfigs` again and restart the tasks (e.g. the set of tables changed). */
  requestTaskReconfiguration(): void;
}

/** An offset given to `alterOffsets`: decoded partition, decoded offset or null (remove). */
export interface OffsetChange<P, O> {
  readonly partition: P;
  readonly offset: O | null;
}

/**
 * A source connector: declares its configuration, splits the work into task configs and
 * names the task class that does it.
 *
 * @typeParam C - the decoded connector config, from {@link SourceConnector.config}
 * @typeParam TC - one task's config, as {@link SourceConnector.taskConfigs} returns it; must be JSON
 *
 * @example
 * ```ts
 * import { configTypes, defineConfig, type SourceTaskClass } from 'tributary-connect';
 *
 * declare const CounterTask: SourceTaskClass<{ id: string }, { n: number }, { topic: string }>; // see SourceTask
 *
 * class CounterConnector extends SourceConnector<{ topic: string }, { topic: string }> {
 *   readonly config = defineConfig({ topic: { type: configTypes.string, description: 'Where to write.' } });
 *   readonly taskClass = CounterTask;
 *   taskConfigs(_maxTasks: number, config: { topic: string }) { return [config]; }
 * }
 * ```
 */
export abstract class SourceConnector<C = any, TC = any, P = any, O = any> {
  static readonly [CONNECTOR_BRAND] = true;

  /** The connector's configuration keys with types, defaults and descriptions. */
  abstract readonly config: ConfigDef<C>;
  /** The task class that runs each of `taskConfigs`. */
  abstract readonly taskClass: SourceTaskClass<P, O, TC>;
  /** Shown by `GET /connector-plugins`. */
  readonly version: string = '0.0.0';

  /** Called with the decoded config before `taskConfigs`. Default: nothing. */
  start(_config: C, _context: ConnectorContext): void | Promise<void> {}

  /**
   * At most `maxTasks` task configs (from `tasks.max`); one task runs per entry. Gets the
   * decoded config too, so most connectors need no `start` of their own.
   */
  abstract taskConfigs(maxTasks: number, config: C): TC[] | Promise<TC[]>;

  /** Called when the connector stops. Default: nothing. */
  stop(): void | Promise<void> {}

  /**
   * Whether this connector accepts offsets set from outside (REST `PATCH` and `DELETE`
   * `/offsets`, offsets given at creation). Called only with entries that decoded through the
   * task's codec. Return false or throw to reject with a message. Default: accept.
   */
  alterOffsets(_config: C, _offsets: ReadonlyArray<OffsetChange<P, O>>): boolean | Promise<boolean> {
    return true;
  }

  /**
   * KIP-618: whether this connector, with this config, can deliver exactly once on a worker
   * with `exactly.once.source.support=enabled`: its tasks resume exactly after the offset of
   * the last record committed (no record is skipped or repeated from a committed offset).
   * With `exactly.once.support=required`, anything but `'supported'` refuses the connector at
   * create and in validate. Default: `undefined` (not known), as in Kafka Connect.
   *
   * @example
   * ```ts
   * import { configTypes, defineConfig, type ExactlyOnceSupport, SourceTask } from 'tributary-connect';
   *
   * declare const FileTask: new () => SourceTask<{ file: string }, { position: number }, { file: string }>;
   *
   * class FileConnector extends SourceConnector<{ file: string }, { file: string }> {
   *   readonly config = defineConfig({ file: { type: configTypes.string, description: 'File to read, - for stdin.' } });
   *   readonly taskClass = FileTask;
   *   taskConfigs(_maxTasks: number, config: { file: string }) {
   *     return [config];
   *   }
   *   override exactlyOnceSupport(config: { file: string }): ExactlyOnceSupport {
   *     return config.file === '-' ? 'unsupported' : 'supported'; // stdin cannot be re-read
   *   }
   * }
   * ```
   */
  exactlyOnceSupport(_config: C): ExactlyOnceSupport | undefined {
    return undefined;
  }

  /**
   * KIP-618: whether this connector's tasks, with this config, define their own transaction
   * boundaries through `context.transactionContext`. `transaction.boundary=connector` is
   * refused unless this returns `'supported'`. Default: `'unsupported'`.
   */
  canDefineTransactionBoundaries(_config: C): ConnectorTransactionBoundaries {
    return 'unsupported';
  }
}

/** A concrete connector class. */
export type SourceConnectorClass = new () => SourceConnector;

/** True for a class that extends `SourceConnector` from any copy of Tributary. */
export function isSourceConnectorClass(value: unknown): value is SourceConnectorClass {
  return typeof value === 'function' && (value as unknown as Record<symbol, unknown>)[CONNECTOR_BRAND] === true;
}
