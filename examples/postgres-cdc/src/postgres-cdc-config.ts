import * as t from 'io-ts';
import { ConfigError, type ConfigType, configTypes, defineConfig } from 'tributary-connect';

/**
 * The configuration of the PostgreSQL CDC connector. Names follow Debezium's PostgreSQL
 * connector where one exists (`database.*`, `slot.name`, `publication.name`, `topic.prefix`,
 * `max.batch.size`, `max.queue.size`).
 */
export const postgresCdcConfig = defineConfig({
  'connection.string': {
    type: configTypes.string,
    default: '',
    password: true,
    description: 'libpq connection URI, e.g. postgresql://user:secret@db:5432/shop. When set, the database.* keys are ignored.',
  },
  'database.hostname': { type: configTypes.string, default: 'localhost', description: 'Server host, or a unix socket folder.' },
  'database.port': { type: configTypes.positiveInt, default: 5432, description: 'Server port.' },
  'database.user': {
    type: configTypes.string,
    default: 'postgres',
    description: 'Role to connect as; it needs the REPLICATION attribute (or superuser).',
  },
  'database.password': { type: configTypes.string, default: '', password: true, description: 'Password of database.user.' },
  'database.dbname': { type: configTypes.string, default: 'postgres', description: 'Database whose changes are captured.' },
  'slot.name': {
    type: configTypes.string,
    default: 'tributary',
    description: 'Logical replication slot (pgoutput) the changes are read from; it is also the source partition.',
  },
  'slot.create': {
    type: configTypes.boolean,
    default: true,
    description:
      'Create the slot when it does not exist and no offset was committed yet. With a committed offset a missing slot is always an error.',
  },
  'publication.name': {
    type: configTypes.string,
    default: 'tributary',
    description: 'Publication that selects the captured tables.',
  },
  'publication.create': {
    type: configTypes.boolean,
    default: true,
    description:
      'Create the publication FOR TABLE <tables> when it does not exist. An existing one must already contain the tables.',
  },
  tables: {
    type: configTypes.list,
    description: 'Captured tables, as schema.table or table (schema public), comma-separated.',
  },
  'topic.prefix': {
    type: configTypes.string,
    description: 'Prefix of the data topics: changes of schema.table go to <topic.prefix>.<schema>.<table>.',
  },
  'max.queue.size': {
    type: configTypes.positiveInt,
    default: 8192,
    description: 'Row changes held between the replication stream and poll(); the stream is paused when it is full.',
  },
  'max.batch.size': { type: configTypes.positiveInt, default: 2048, description: 'Most records one poll round returns.' },
  'query.timeout.ms': {
    // Node's timers take at most 2^31 - 1 ms; a larger delay fires at once.
    type: t.refinement(configTypes.int, (n) => n >= 1 && n <= 2_147_483_647, 'integer from 1 to 2147483647'),
    default: 30_000,
    description:
      "How long the task's checks of the publication and the catalog, and its source-lag query, may take while it runs, " +
      'opening their connection included. A check that takes longer fails the task (one that hung would hold back ' +
      'heartbeats and the confirmations to the slot without a word); a lag query that takes longer shows the lag unknown.',
  },
});

/** The decoded connector (and task) configuration. */
export type PostgresCdcConfig = ConfigType<typeof postgresCdcConfig>;

/** A captured table. */
export interface TableName {
  readonly schema: string;
  readonly table: string;
}

/**
 * The `tables` setting as schema-qualified names; `orders` means `public.orders`. Throws a
 * ConfigError (code `CONFIG_INVALID`) naming each entry that is not `table` or `schema.table`.
 */
export function parseTables(tables: readonly string[]): TableName[] {
  const problems: string[] = [];
  const parsed: TableName[] = [];
  for (const entry of tables) {
    const parts = entry.split('.');
    if (parts.length > 2 || parts.some((p) => p.length === 0)) {
      problems.push(`tables: "${entry}" is not table or schema.table`);
      continue;
    }
    parsed.push(
      parts.length === 2 ? { schema: parts[0] as string, table: parts[1] as string } : { schema: 'public', table: entry },
    );
  }
  if (parsed.length === 0 && problems.length === 0) problems.push('tables: name at least one table to capture');
  if (problems.length > 0) throw new ConfigError('postgres-cdc config', problems);
  return parsed;
}

/** `schema.table`, the key the task uses for a table. */
export function qualifiedName(name: TableName): string {
  return `${name.schema}.${name.table}`;
}
