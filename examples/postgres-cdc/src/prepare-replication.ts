import pg from 'pg';
import { ConfigError, type Logger, TributaryError } from 'tributary-connect';
import type { CdcOffset } from './cdc-offsets.js';
import { formatLsn, parseLsn } from './lsn.js';
import { type PostgresCdcConfig, parseTables, qualifiedName, type TableName } from './postgres-cdc-config.js';
import { readPublication, readPublishedTables } from './published-tables.js';

/** What {@link prepareReplication} found out: where to start and how to key each table. */
export interface ReplicationPlan {
  /** The position `START_REPLICATION` asks for. */
  readonly startLsn: bigint;
  /** What has been delivered already: the committed offset, else the slot's `confirmed_flush_lsn`. */
  readonly resumeFrom: CdcOffset;
  /** Primary key columns per `schema.table` (empty when the table has none). */
  readonly primaryKeys: ReadonlyMap<string, readonly string[]>;
  /** The relation OID of each captured `schema.table`, as the publication held it at start. */
  readonly tableOids: ReadonlyMap<string, number>;
  /** OIDs of the relations the publication held at start besides the captured tables: their changes are not captured. */
  readonly otherRelations: ReadonlySet<number>;
}

/** The flags of a publication that decide what it sends. */
/** What the catalog says about a captured table. */
interface TableInfo {
  readonly oid: number;
  /** `r` table, `p` partitioned table. */
  readonly kind: string;
  readonly primaryKey: readonly string[];
  /** The columns pgoutput can send (not dropped, not generated). */
  readonly columns: readonly string[];
  /** `relreplident`: `d` default (primary key), `i` index, `f` full, `n` nothing. */
  readonly identity: string;
  /** With `identity` `i`: the index's name and columns. */
  readonly identityIndex: { readonly name: string; readonly columns: readonly string[] } | null;
}

interface SlotRow {
  plugin: string | null;
  slot_type: string;
  database: string | null;
  active_pid: number | null;
  confirmed_flush_lsn: string | null;
  restart_lsn: string | null;
  wal_status: string | null;
}

/**
 * Checks the server, the captured tables, the publication and the slot, creates what is
 * missing where the config allows it, and decides where replication starts:
 *
 * - with a committed offset: at its LSN. The slot must exist (else the changes since that
 *   offset are gone and that is an error, never a silent start from now), must not have
 *   confirmed past the offset (the server would skip what lies between), and the offset must
 *   not be ahead of the server's WAL (offsets of another server, or a restored cluster).
 * - without: at the slot's `confirmed_flush_lsn`; a slot created here starts at the current WAL.
 *
 * Server problems throw a TributaryError `TASK_START_FAILED`; config that does not match the
 * server (missing table, table not in the publication, slot of another plugin or database)
 * throws a ConfigError (`CONFIG_INVALID`).
 */
export async function prepareReplication(
  admin: pg.Client,
  config: PostgresCdcConfig,
  committed: CdcOffset | undefined,
  logger: Logger,
  server: string,
): Promise<ReplicationPlan> {
  const slot = config['slot.name'];
  const publication = config['publication.name'];
  const tables = parseTables(config.tables);
  const fail = (message: string) => new TributaryError('TASK_START_FAILED', `PostgreSQL CDC on ${server}: ${message}`);

  const level = (await admin.query<{ wal_level: string }>('SHOW wal_level')).rows[0]?.wal_level;
  if (level !== 'logical') {
    throw fail(
      `wal_level is '${level}', logical replication needs 'logical' (ALTER SYSTEM SET wal_level = logical, then restart the server)`,
    );
  }
  const { rows: serverRows } = await admin.query<{ db: string; current: string }>(
    'SELECT current_database() AS db, pg_current_wal_lsn()::text AS current',
  );
  const database = serverRows[0]?.db ?? '';
  const current = parseLsn(serverRows[0]?.current ?? '0/0');

  const info = await readTables(admin, tables, database);
  const primaryKeys = new Map([...info].map(([name, t]) => [name, t.primaryKey]));
  const { tableOids, otherRelations } = await ensurePublication(
    admin,
    publication,
    tables,
    info,
    config['publication.create'],
    logger,
    fail,
  );
  const known = { primaryKeys, tableOids, otherRelations };

  const { rows: slots } = await admin.query<SlotRow>(
    `SELECT plugin, slot_type, database, active_pid, confirmed_flush_lsn::text, restart_lsn::text, wal_status
       FROM pg_replication_slots WHERE slot_name = $1`,
    [slot],
  );
  const found = slots[0];
  if (!found) {
    if (committed) {
      throw fail(
        `replication slot "${slot}" does not exist, but offset ${JSON.stringify(committed)} was committed from it: ` +
          'the changes since then can no longer be read. To start over from now, create the slot and delete the ' +
          "connector's offsets (DELETE /connectors/<name>/offsets); a re-snapshot is up to you.",
      );
    }
    if (!config['slot.create']) {
      throw fail(
        `replication slot "${slot}" does not exist and slot.create is false: ` +
          `create it with SELECT pg_create_logical_replication_slot('${slot}', 'pgoutput')`,
      );
    }
    const created = await admin.query<{ lsn: string }>(
      "SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')",
      [slot],
    );
    const lsn = created.rows[0]?.lsn ?? formatLsn(current);
    logger.info({ event: 'postgres-cdc.slot.created', slot, lsn }, `created replication slot "${slot}" at ${lsn}`);
    return { startLsn: parseLsn(lsn), resumeFrom: { lsn }, ...known };
  }

  if (found.slot_type !== 'logical' || found.plugin !== 'pgoutput') {
    throw new ConfigError('postgres-cdc config', [
      `slot.name: slot "${slot}" is a ${found.slot_type} slot${found.plugin ? ` of plugin ${found.plugin}` : ''}, not a logical pgoutput slot`,
    ]);
  }
  if (found.database !== database) {
    throw new ConfigError('postgres-cdc config', [
      `slot.name: slot "${slot}" belongs to database "${found.database}", not "${database}"`,
    ]);
  }
  if (found.wal_status === 'lost' || found.restart_lsn === null || found.confirmed_flush_lsn === null) {
    throw fail(
      `replication slot "${slot}" has been invalidated (wal_status ${found.wal_status ?? 'unknown'}): the WAL it needs was removed. ` +
        "Drop and recreate it and delete the connector's offsets to start over.",
    );
  }
  if (found.active_pid !== null) {
    throw fail(`replication slot "${slot}" is in use by server process ${found.active_pid}: stop the other reader first`);
  }
  const confirmed = parseLsn(found.confirmed_flush_lsn);
  if (!committed) return { startLsn: confirmed, resumeFrom: { lsn: found.confirmed_flush_lsn }, ...known };

  const offsetLsn = parseLsn(committed.lsn);
  if (offsetLsn < confirmed) {
    throw fail(
      `the committed offset (lsn ${committed.lsn}) is behind replication slot "${slot}", which confirmed ` +
        `${found.confirmed_flush_lsn}: the server no longer has the changes in between. Something else advanced ` +
        "the slot; delete the connector's offsets to start from the slot's position (those changes are lost).",
    );
  }
  if (offsetLsn > current) {
    throw fail(
      `the committed offset (lsn ${committed.lsn}) is ahead of the server's WAL (${formatLsn(current)}): ` +
        'the offsets belong to another server, or this cluster was restored from a backup.',
    );
  }
  return { startLsn: offsetLsn, resumeFrom: committed, ...known };
}

async function readTables(admin: pg.Client, tables: TableName[], database: string): Promise<Map<string, TableInfo>> {
  const { rows } = await admin.query<{
    oid: string;
    schema: string;
    table: string;
    kind: string;
    pk: string[];
    cols: string[];
    identity: string;
    identity_index: string | null;
    identity_cols: string[];
  }>(
    `SELECT c.oid::text AS oid, n.nspname AS schema, c.relname AS table, c.relkind::text AS kind,
            ARRAY(SELECT a.attname::text
                    FROM pg_index i
                    CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                   WHERE i.indrelid = c.oid AND i.indisprimary
                   ORDER BY k.ord) AS pk,
            ARRAY(SELECT a.attname::text FROM pg_attribute a
                   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
                   ORDER BY a.attnum) AS cols,
            c.relreplident::text AS identity,
            (SELECT i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = c.oid AND i.indisreplident) AS identity_index,
            ARRAY(SELECT a.attname::text
                    FROM pg_index i
                    CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
                    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                   WHERE i.indrelid = c.oid AND i.indisreplident
                   ORDER BY k.ord) AS identity_cols
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p')
        AND (n.nspname, c.relname) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [tables.map((t) => t.schema), tables.map((t) => t.table)],
  );
  const keys = new Map(
    rows.map((r) => [
      `${r.schema}.${r.table}`,
      {
        oid: Number(r.oid),
        kind: r.kind,
        primaryKey: r.pk,
        columns: r.cols,
        identity: r.identity,
        identityIndex: r.identity === 'i' && r.identity_index ? { name: r.identity_index, columns: r.identity_cols } : null,
      } satisfies TableInfo,
    ]),
  );
  const missing = tables.map(qualifiedName).filter((name) => !keys.has(name));
  if (missing.length > 0) {
    throw new ConfigError(
      'postgres-cdc config',
      missing.map((name) => `tables: table ${name} does not exist in database "${database}"`),
    );
  }
  // A delete carries only the replica identity's columns: an identity index without the whole
  // primary key would give deletes a key of nulls.
  const keyless: string[] = [];
  for (const [name, t] of keys) {
    const index = t.identityIndex;
    if (!index || t.primaryKey.length === 0) continue;
    const absent = t.primaryKey.filter((c) => !index.columns.includes(c));
    if (absent.length === 0) continue;
    keyless.push(
      `tables: ${name} has REPLICA IDENTITY USING INDEX ${index.name} (${index.columns.join(', ')}), which lacks ` +
        `primary key column(s) ${absent.join(', ')}: a delete would carry no primary key, and the record key is the ` +
        `primary key. ALTER TABLE ${name} REPLICA IDENTITY DEFAULT (or FULL), or use an identity index that contains the primary key`,
    );
  }
  if (keyless.length > 0) throw new ConfigError('postgres-cdc config', keyless);
  return keys;
}

/**
 * Creates the publication when it is missing (and allowed to), then checks that it publishes
 * each captured table as itself: a partitioned table under its own name, not its partitions'.
 */
async function ensurePublication(
  admin: pg.Client,
  publication: string,
  tables: TableName[],
  info: ReadonlyMap<string, TableInfo>,
  create: boolean,
  logger: Logger,
  fail: (message: string) => TributaryError,
): Promise<{ tableOids: Map<string, number>; otherRelations: Set<number> }> {
  const quoted = pg.escapeIdentifier(publication);
  const pub = await readPublication(admin, publication);
  if (!pub) {
    if (!create) throw fail(`publication "${publication}" does not exist and publication.create is false`);
    const list = tables.map((t) => `${pg.escapeIdentifier(t.schema)}.${pg.escapeIdentifier(t.table)}`).join(', ');
    // Via the root, a partitioned table's changes come under its own name; without, under each
    // partition's, which are not the captured table.
    await admin.query(`CREATE PUBLICATION ${quoted} FOR TABLE ${list} WITH (publish_via_partition_root = true)`);
    logger.info({ event: 'postgres-cdc.publication.created', publication }, `created publication "${publication}" for ${list}`);
  } else {
    const left = (['insert', 'update', 'delete'] as const).filter((op) => !pub[op]);
    if (left.length > 0) {
      const all = pub.truncate ? 'insert, update, delete, truncate' : 'insert, update, delete';
      throw new ConfigError('postgres-cdc config', [
        `publication.name: publication "${publication}" does not publish ${left.join(', ')}: those changes of the ` +
          `captured tables would be lost. It must publish insert, update and delete: ALTER PUBLICATION ${quoted} SET (publish = '${all}')`,
      ]);
    }
  }
  if (pub && pub.viaroot !== true) {
    const partitioned = [...info].filter(([, t]) => t.kind === 'p').map(([name]) => name);
    if (partitioned.length > 0) {
      throw new ConfigError(
        'postgres-cdc config',
        partitioned.map(
          (name) =>
            `tables: ${name} is a partitioned table, and publication "${publication}" publishes its changes under the ` +
            `partitions' names, which are not captured: ALTER PUBLICATION ${quoted} SET (publish_via_partition_root = true)`,
        ),
      );
    }
  }
  const published = await readPublishedTables(admin, publication);
  const byName = new Map(published.map((t) => [t.name, t]));
  const missing = tables.map(qualifiedName).filter((name) => !byName.has(name));
  if (missing.length > 0) {
    throw new ConfigError(
      'postgres-cdc config',
      missing.map(
        (name) => `tables: ${name} is not in publication "${publication}" (ALTER PUBLICATION ${publication} ADD TABLE ${name})`,
      ),
    );
  }
  const partial: string[] = [];
  for (const name of tables.map(qualifiedName)) {
    const table = byName.get(name);
    const columns = info.get(name)?.columns ?? [];
    if (!table) continue;
    const fix = `publish it whole: ALTER PUBLICATION ${quoted} DROP TABLE ${name}, then ALTER PUBLICATION ${quoted} ADD TABLE ${name}`;
    if (table.rowFilter !== null) {
      partial.push(
        `tables: publication "${publication}" publishes only the rows of ${name} WHERE ${table.rowFilter}: changes of other rows would be lost; ${fix}`,
      );
    }
    const unpublished = table.columns === null ? [] : columns.filter((c) => !table.columns?.includes(c));
    if (unpublished.length > 0) {
      partial.push(
        `tables: publication "${publication}" leaves column(s) ${unpublished.join(', ')} of ${name} out of its column list: ` +
          `records would lack them; ${fix}`,
      );
    }
  }
  if (partial.length > 0) throw new ConfigError('postgres-cdc config', partial);
  const tableOids = new Map(tables.map(qualifiedName).map((name) => [name, byName.get(name)?.oid ?? 0]));
  const captured = new Set(tableOids.values());
  return { tableOids, otherRelations: new Set(published.map((t) => t.oid).filter((oid) => !captured.has(oid))) };
}
