import pg from 'pg';
import { defer, EMPTY, map, mergeMap, type Observable, of } from 'rxjs';
import {
  BoundedBuffer,
  type HeartbeatRecord,
  isTributaryError,
  type OffsetUpdate,
  type SourceLag,
  type SourceRecord,
  SourceTask,
  type SourceTaskContext,
  TributaryError,
} from 'tributary-connect';
import { type CdcOffset, type CdcPartition, cdcOffsets } from './cdc-offsets.js';
import { ChangeDecoder, type RowChange } from './change-decoder.js';
import { clientConfig, describeServer } from './client-config.js';
import { formatLsn, maxLsn, parseLsn } from './lsn.js';
import { MonitorConnection } from './monitor-connection.js';
import type { PostgresCdcConfig } from './postgres-cdc-config.js';
import { prepareReplication } from './prepare-replication.js';
import { capturedTableChanges } from './published-tables.js';
import { ReplicationStream } from './replication-stream.js';

/** The value of a data record. */
export interface ChangeValue {
  /** `c` insert, `u` update, `d` delete. */
  readonly op: 'c' | 'u' | 'd';
  readonly before: Record<string, unknown> | null;
  readonly after: Record<string, unknown> | null;
  readonly source: {
    readonly slot: string;
    readonly schema: string;
    readonly table: string;
    /** WAL position of the change. */
    readonly lsn: string;
    /** Commit LSN of its transaction. */
    readonly commit_lsn: string;
    readonly txid: number;
    /** Commit time, ms since the epoch. */
    readonly ts_ms: number;
  };
}

/** The value of a heartbeat record. */
export interface HeartbeatValue {
  readonly slot: string;
  /** The server position the heartbeat carries (also its offset). */
  readonly lsn: string;
  /** When it was produced, ms since the epoch (task clock). */
  readonly ts_ms: number;
}

/**
 * Streams row changes of the configured tables from a pgoutput replication slot: one record
 * per insert, update or delete, keyed by primary key, to `<topic.prefix>.<schema>.<table>`.
 *
 * - Offsets: partition `{ slot }`, offset `{ lsn, changes? }` (see {@link CdcOffset}).
 * - Heartbeats (`heartbeat.interval.ms` > 0): while nothing is pending (no row change waiting
 *   for `poll()`, no transaction half-received) a heartbeat carries the latest server position
 *   seen in a keepalive, so the offset moves while the captured tables are idle.
 * - `commit(committed)`: after each offset flush, confirms the flushed LSN to the slot
 *   (`confirmed_flush_lsn`), never anything that was not committed; the server may then
 *   free the WAL before it.
 * - Before a heartbeat and before each confirmation it runs the start checks of the publication
 *   again, and fails the task if one fails: each captured table still held as the relation (OID)
 *   found at start (a table dropped and re-created, or swapped by renames, is not in the
 *   publication), insert, update and delete still published, partitioned tables via the root, no
 *   row filter and no column list that leaves out a current column. Moving the offset past
 *   changes the publication no longer sends whole would lose them without a word.
 *
 * @example
 * ```ts
 * const parsed = postgresCdcConfig.parse({ 'connection.string': url, tables: 'orders', 'topic.prefix': 'shop' });
 * if (!parsed.ok) throw new Error(parsed.problems.map((p) => p.message).join('; '));
 * const run = await MockRuntime.start(PostgresCdcTask, {
 *   config: parsed.value,
 *   connectorConfig: { 'heartbeat.interval.ms': 1000 },
 * });
 * ```
 */
export class PostgresCdcTask extends SourceTask<CdcPartition, CdcOffset, PostgresCdcConfig> {
  readonly offsets = cdcOffsets;

  private config!: PostgresCdcConfig;
  private context!: SourceTaskContext<CdcPartition, CdcOffset>;
  private partition!: CdcPartition;
  private stream: ReplicationStream | undefined;
  private buffer!: BoundedBuffer<RowChange>;
  private decoder!: ChangeDecoder;
  private primaryKeys: ReadonlyMap<string, readonly string[]> = new Map();
  /** LSN of the newest offset handed to the runtime (data or heartbeat). */
  private lastOffsetLsn = 0n;
  /** The LSN confirmed to the slot: the committed offset's, only ever moving forward. */
  private confirmed = 0n;
  /** A plain connection for the checks of the publication and the catalog while the task runs. */
  private checkConnection!: MonitorConnection;
  /** Another for the source-lag query: one that is slow holds back no check. */
  private lagConnection!: MonitorConnection;
  /** Relation OID of each captured `schema.table`, as checked at start. */
  private tableOids: ReadonlyMap<string, number> = new Map();
  /** The confirmation under way (checked, then sent): `stop()` waits for it. */
  private confirming: Promise<void> = Promise.resolve();
  /** Catalog checks of unknown relations under way: while any is, changes are held and the stream paused. */
  private relationChecks = 0;
  /** The checks of unknown relations, one after the other. */
  private relationCheck: Promise<void> = Promise.resolve();
  /** Row changes decoded while a relation check was under way, in order. */
  private held: RowChange[] = [];

  async start(config: PostgresCdcConfig, context: SourceTaskContext<CdcPartition, CdcOffset>): Promise<void> {
    this.config = config;
    this.context = context;
    this.partition = { slot: config['slot.name'] };
    const server = describeServer(config);
    const monitor = { client: clientConfig(config), timeoutMs: config['query.timeout.ms'], server };
    this.checkConnection = new MonitorConnection(monitor);
    this.lagConnection = new MonitorConnection(monitor);
    const committed = await context.offsets.offset(this.partition);

    const admin = new pg.Client(clientConfig(config));
    let plan: Awaited<ReturnType<typeof prepareReplication>>;
    try {
      await admin.connect();
      plan = await prepareReplication(admin, config, committed, context.logger, server);
    } catch (e) {
      throw startError(e, `could not prepare replication on ${server}`);
    } finally {
      await admin.end().catch(() => {});
    }
    this.primaryKeys = plan.primaryKeys;
    this.tableOids = plan.tableOids;
    this.lastOffsetLsn = parseLsn(plan.resumeFrom.lsn);
    this.confirmed = plan.startLsn;

    this.buffer = new BoundedBuffer<RowChange>({
      capacity: config['max.queue.size'],
      onPause: () => this.stream?.pause(),
      onResume: () => {
        if (this.relationChecks === 0) this.stream?.resume();
      },
    });
    this.decoder = new ChangeDecoder({
      resumeFrom: plan.resumeFrom,
      tables: plan.tableOids,
      otherRelations: plan.otherRelations,
      publication: config['publication.name'],
      emit: (change) => {
        if (this.relationChecks > 0) this.held.push(change);
        else this.buffer.push(change);
      },
      unknownRelation: (relation) => this.checkUnknownRelation(relation),
    });
    try {
      this.stream = await ReplicationStream.open({
        client: clientConfig(config),
        slot: config['slot.name'],
        publication: config['publication.name'],
        startLsn: plan.startLsn,
        now: () => context.clock.now(),
        handlers: {
          message: (lsn, message) => this.decoder.onMessage(lsn, message),
          keepalive: (walEnd, replyRequested) => {
            this.decoder.onKeepalive(walEnd);
            if (replyRequested) this.stream?.confirm(this.confirmed);
          },
          failed: (error) =>
            this.buffer.fail(
              new TributaryError(
                'POLL_FAILED',
                `Replication from slot "${config['slot.name']}" on ${server} failed: ${error.message}`,
                { cause: error },
              ),
            ),
        },
      });
    } catch (e) {
      throw startError(e, `could not start replication from slot "${config['slot.name']}" on ${server}`);
    }
    // The first messages can arrive with the server's answer, before `stream` was set.
    if (this.buffer.isPaused || this.relationChecks > 0) this.stream.pause();
    // The start position is committed (or is the slot's own): say so at once.
    this.stream.confirm(this.confirmed);
    context.logger.info(
      { event: 'postgres-cdc.started', slot: config['slot.name'], lsn: formatLsn(plan.startLsn), resumeFrom: plan.resumeFrom },
      `replicating from slot "${config['slot.name']}" at ${formatLsn(plan.startLsn)}`,
    );
  }

  poll(): Observable<SourceRecord<CdcPartition, CdcOffset>> {
    return this.buffer.drainObservable(this.config['max.batch.size']).pipe(map((change) => this.toRecord(change)));
  }

  override produceHeartbeatRecords(): Observable<HeartbeatRecord<CdcPartition, CdcOffset>> {
    return defer(() => this.nextHeartbeat()).pipe(mergeMap((beat) => (beat ? of(beat) : EMPTY)));
  }

  private async nextHeartbeat(): Promise<HeartbeatRecord<CdcPartition, CdcOffset> | undefined> {
    // A heartbeat must never overtake a row change: only when none waits for poll() and no
    // transaction is half-received is the keepalive position past everything handed on.
    const idle = () => this.buffer.size === 0 && this.relationChecks === 0 && !this.decoder.inTransaction;
    const position = this.decoder.idlePosition;
    if (!idle() || position <= this.lastOffsetLsn) return undefined;
    // Checked after the position was read: a table swapped before it shows in the catalog now.
    await this.checkCapturedTables();
    // Changes may have arrived and been handed on meanwhile: a heartbeat behind them would
    // take the offset back.
    if (!idle() || position <= this.lastOffsetLsn) return undefined;
    this.lastOffsetLsn = position;
    const lsn = formatLsn(position);
    const value: HeartbeatValue = { slot: this.partition.slot, lsn, ts_ms: this.context.clock.now() };
    return { sourcePartition: this.partition, sourceOffset: { lsn }, key: { slot: this.partition.slot }, value };
  }

  /**
   * A relation neither captured nor in the publication at start sent a change (a table created,
   * or added to the publication, while the task runs; a partition published under its own
   * name). Its changes are dropped, which loses nothing unless it is a partition of a captured
   * table: the catalog says, and the task fails then. Until it has said, the changes decoded
   * after it are held back and the stream paused, so no offset (data or heartbeat) passes it.
   */
  private checkUnknownRelation(relation: { readonly name: string; readonly oid: number }): void {
    this.relationChecks++;
    this.stream?.pause();
    this.relationCheck = this.relationCheck.then(async () => {
      try {
        const root = await this.capturedAncestor(relation.oid);
        if (root !== undefined) {
          const publication = this.config['publication.name'];
          throw new TributaryError(
            'POLL_FAILED',
            `PostgreSQL CDC on ${describeServer(this.config)}: publication "${publication}" sent a change of ` +
              `${relation.name} (relation OID ${relation.oid}), a partition of captured table ${root}, under the ` +
              "partition's own name: those changes are not captured and would be lost without a word. The publication " +
              'must publish them via the partition root: ALTER PUBLICATION ' +
              `${pg.escapeIdentifier(publication)} SET (publish_via_partition_root = true), then restart the task.`,
          );
        }
      } catch (e) {
        this.held = [];
        this.buffer.fail(
          isTributaryError(e)
            ? e
            : new TributaryError(
                'POLL_FAILED',
                `PostgreSQL CDC on ${describeServer(this.config)}: could not check whether ${relation.name} (relation ` +
                  `OID ${relation.oid}), which the publication sent a change of, is a partition of a captured table: ` +
                  `${e instanceof Error ? e.message : String(e)}`,
                { cause: e },
              ),
        );
        return;
      }
      if (--this.relationChecks > 0) return;
      for (const change of this.held.splice(0)) this.buffer.push(change);
      if (!this.buffer.isPaused) this.stream?.resume();
    });
  }

  /** The captured table `oid` is a declarative partition of (at any depth), by the catalog; undefined when none. */
  private async capturedAncestor(oid: number): Promise<string | undefined> {
    const { rows } = await this.checkConnection.run('the catalog lookup of a relation the publication sent', (client) =>
      client.query<{ oid: string }>(
        // Declarative partitions only (relispartition at each step): a table that INHERITS a
        // captured one is another table, whose changes pgoutput never sends under its parent.
        `WITH RECURSIVE up(relid) AS (
         SELECT i.inhparent FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           WHERE i.inhrelid = $1::oid AND c.relispartition
         UNION SELECT i.inhparent FROM pg_inherits i JOIN up ON i.inhrelid = up.relid
           JOIN pg_class c ON c.oid = i.inhrelid WHERE c.relispartition)
       SELECT relid::text AS oid FROM up`,
        [oid],
      ),
    );
    const ancestors = new Set(rows.map((r) => Number(r.oid)));
    for (const [name, captured] of this.tableOids) if (ancestors.has(captured)) return name;
    return undefined;
  }

  /**
   * Throws a TributaryError (`POLL_FAILED`) when the publication no longer sends every change of
   * each captured table whole: the start checks of the publication, run again (see
   * {@link capturedTableChanges}).
   */
  private async checkCapturedTables(): Promise<void> {
    const problems = await this.checkConnection.run('the check of the publication', (client) =>
      capturedTableChanges(client, this.config['publication.name'], this.tableOids),
    );
    if (problems.length === 0) return;
    throw new TributaryError(
      'POLL_FAILED',
      `PostgreSQL CDC on ${describeServer(this.config)}: the publication changed while the task ran: ${problems.join('; ')}. ` +
        'Changes of the captured tables since then may be missing from the records, and the offset is not moved past them.',
    );
  }

  /**
   * Confirms to the slot the LSN of the offset this flush made durable. A data record's offset
   * is the commit LSN of a transaction possibly delivered in part; confirming that LSN frees
   * only what committed before it, so the transaction is sent again on restart.
   */
  override commit(committed: ReadonlyArray<OffsetUpdate<CdcPartition, CdcOffset>>): Promise<void> {
    const mine = committed.find((c) => c.partition.slot === this.partition.slot);
    if (!mine || !this.stream) return this.confirming;
    const lsn = parseLsn(mine.offset.lsn);
    if (lsn <= this.confirmed) return this.confirming;
    // Nothing past a captured table that was swapped is confirmed: the task fails instead,
    // and the slot keeps the WAL.
    this.confirming = this.confirming
      .then(() => this.checkCapturedTables())
      .then(
        () => {
          this.confirmed = maxLsn(this.confirmed, lsn);
          this.stream?.confirm(this.confirmed);
        },
        (e: unknown) => this.buffer.fail(e),
      );
    return this.confirming;
  }

  /**
   * Source lag: the WAL the slot retains for this task, bytes from the server's current LSN to
   * the slot's `confirmed_flush_lsn`, and, while PostgreSQL measures it, the time behind
   * (`flush_lag` of the slot's WAL sender). Unknown (undefined) when the slot is gone.
   */
  override async sourceLag(): Promise<SourceLag | undefined> {
    const { rows } = await this.lagConnection.run('the source lag query', (client) =>
      client.query<{ bytes: string | null; lag_ms: string | null }>(
        `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), s.confirmed_flush_lsn)::bigint::text AS bytes,
              (EXTRACT(EPOCH FROM r.flush_lag) * 1000)::bigint::text AS lag_ms
         FROM pg_replication_slots s LEFT JOIN pg_stat_replication r ON r.pid = s.active_pid
        WHERE s.slot_name = $1`,
        [this.partition.slot],
      ),
    );
    const row = rows[0];
    if (row?.bytes === null || row?.bytes === undefined) return undefined;
    const position = Math.max(0, Number(row.bytes));
    return row.lag_ms === null ? { position, unit: 'bytes' } : { position, unit: 'bytes', timeMs: Number(row.lag_ms) };
  }

  override async stop(): Promise<void> {
    // The last flush's confirmation goes out before the stream closes.
    await this.confirming;
    await this.stream?.close();
    this.stream = undefined;
    await Promise.all([this.checkConnection?.close(), this.lagConnection?.close()]);
  }

  private toRecord(change: RowChange): SourceRecord<CdcPartition, CdcOffset> {
    const name = `${change.schema}.${change.table}`;
    const pk = this.primaryKeys.get(name);
    const keyColumns = pk && pk.length > 0 ? pk : change.identityColumns;
    const row = change.after ?? change.before;
    if (pk && pk.length > 0 && row && pk.some((c) => row[c] === undefined)) {
      // Checked at start, so the replica identity changed since: a key of nulls would be wrong.
      throw new TributaryError(
        'POLL_FAILED',
        `PostgreSQL CDC: a ${change.op} of ${name} at ${formatLsn(change.lsn)} carries no value for primary key ` +
          `column(s) ${pk.filter((c) => row[c] === undefined).join(', ')}, so it has no record key. The table's REPLICA ` +
          'IDENTITY was probably changed while the task ran to an index without the primary key: set it back ' +
          `(ALTER TABLE ${name} REPLICA IDENTITY DEFAULT) and restart the task.`,
      );
    }
    const key = keyColumns.length > 0 && row ? Object.fromEntries(keyColumns.map((c) => [c, row[c] ?? null])) : null;
    const commitLsn = parseLsn(change.offset.lsn);
    if (commitLsn > this.lastOffsetLsn) this.lastOffsetLsn = commitLsn;
    const value: ChangeValue = {
      op: change.op,
      before: change.before,
      after: change.after,
      source: {
        slot: this.partition.slot,
        schema: change.schema,
        table: change.table,
        lsn: formatLsn(change.lsn),
        commit_lsn: change.offset.lsn,
        txid: change.xid,
        ts_ms: change.commitTime,
      },
    };
    return {
      sourcePartition: this.partition,
      sourceOffset: change.offset,
      topic: `${this.config['topic.prefix']}.${name}`,
      key,
      value,
      timestamp: change.commitTime,
    };
  }
}

function startError(e: unknown, context: string): TributaryError {
  if (isTributaryError(e)) return e;
  const detail = e instanceof Error ? e.message : String(e);
  return new TributaryError('TASK_START_FAILED', `PostgreSQL CDC: ${context}: ${detail}`, { cause: e });
}
