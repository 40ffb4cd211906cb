import type { Pgoutput } from 'pg-logical-replication';
import type { CdcOffset } from './cdc-offsets.js';
import { formatLsn, maxLsn, parseLsn } from './lsn.js';

/** A row change, as the decoder hands it to the task. */
export interface RowChange {
  /** Debezium's letters: `c` insert, `u` update, `d` delete. */
  readonly op: 'c' | 'u' | 'd';
  readonly schema: string;
  readonly table: string;
  /** The old row: all columns with REPLICA IDENTITY FULL, else the key columns when the key changed or the row was deleted; null otherwise. */
  readonly before: Record<string, unknown> | null;
  /** The new row (insert, update); null for a delete. Unchanged TOASTed values are left out. */
  readonly after: Record<string, unknown> | null;
  /** The replica identity columns the server announced for the table. */
  readonly identityColumns: readonly string[];
  /** WAL position of the change itself. */
  readonly lsn: bigint;
  /** Commit LSN of its transaction. */
  readonly commitLsn: bigint;
  readonly xid: number;
  /** Commit time, ms since the epoch. */
  readonly commitTime: number;
  /** Where a restart resumes once this change is delivered. */
  readonly offset: CdcOffset;
}

/** Options of a {@link ChangeDecoder}. */
export interface ChangeDecoderOptions {
  /** The offset the stream resumes from: changes at or before it are not handed on again. */
  readonly resumeFrom: CdcOffset;
  /**
   * The relation OID of each captured `schema.table`, as checked at start. A change under a
   * captured name with another OID fails the decoder: the table was re-created or swapped.
   */
  readonly tables: ReadonlyMap<string, number>;
  /**
   * OIDs of the other relations the publication held at start: their changes are dropped.
   */
  readonly otherRelations: ReadonlySet<number>;
  /**
   * Called once for each relation neither captured nor in `otherRelations` (a table created or
   * added to the publication while the task runs, a partition published under its own name),
   * when its first change arrives. Its changes are dropped; the caller decides, from the
   * catalog, whether that loses changes of a captured table.
   */
  readonly unknownRelation: (relation: { readonly name: string; readonly oid: number }) => void;
  /** The publication, for error messages. */
  readonly publication: string;
  /** Receives each captured row change, in commit order. */
  readonly emit: (change: RowChange) => void;
}

interface OpenTransaction {
  readonly commitLsn: bigint;
  readonly xid: number;
  readonly commitTime: number;
  /** Row changes (insert, update, delete) seen so far, of every table. */
  changes: number;
  /** Row changes to drop at the start of this transaction: they were delivered before a restart. */
  readonly skip: number;
}

/**
 * Turns pgoutput messages into {@link RowChange}s with offsets a restart can resume from, and
 * keeps the position a heartbeat may carry.
 *
 * A data record's offset is `{ lsn: <commit LSN>, changes: <its index in the transaction> }`:
 * pgoutput sends a transaction whole at commit, and a restart from its commit LSN receives it
 * again, so the first `changes` row changes are skipped then. The idle position is the highest
 * keepalive WAL end (or commit end) seen outside a transaction: the server has read everything
 * before it, so every transaction committing before it was already sent.
 */
export class ChangeDecoder {
  private open: OpenTransaction | undefined;
  private resume: CdcOffset | undefined;
  private readonly resumeLsn: bigint;
  private position: bigint;
  /** Relations whose changes are dropped: the publication's others at start, and unknown ones met since. */
  private readonly notCaptured: Set<number>;

  constructor(private readonly options: ChangeDecoderOptions) {
    this.notCaptured = new Set(options.otherRelations);
    this.resume = options.resumeFrom;
    this.resumeLsn = parseLsn(options.resumeFrom.lsn);
    this.position = this.resumeLsn;
  }

  /** True between a transaction's BEGIN and its COMMIT. */
  get inTransaction(): boolean {
    return this.open !== undefined;
  }

  /**
   * The latest position at which nothing was in flight on the wire: everything committed
   * before it has been handed to `emit`. Never below the resume position.
   */
  get idlePosition(): bigint {
    return this.position;
  }

  /** Feeds one pgoutput message and the WAL position it was sent with. */
  onMessage(lsn: bigint, message: Pgoutput.Message): void {
    switch (message.tag) {
      case 'begin':
        this.begin(message);
        return;
      case 'commit':
        if (message.commitEndLsn !== null) this.position = maxLsn(this.position, parseLsn(message.commitEndLsn));
        this.open = undefined;
        return;
      case 'insert':
        this.change('c', lsn, message.relation, null, message.new);
        return;
      case 'update':
        this.change('u', lsn, message.relation, message.old ?? message.key, message.new);
        return;
      case 'delete':
        this.change('d', lsn, message.relation, message.old ?? message.key, null);
        return;
      default:
        // relation and type messages are cached by the parser; truncate, origin and logical
        // messages are not captured.
        return;
    }
  }

  /** Feeds a keepalive's WAL end. Ignored inside a transaction, where it can lag the commit. */
  onKeepalive(walEnd: bigint): void {
    if (!this.open) this.position = maxLsn(this.position, walEnd);
  }

  private begin(message: Pgoutput.MessageBegin): void {
    const commitLsn = message.commitLsn === null ? 0n : parseLsn(message.commitLsn);
    let skip = 0;
    if (commitLsn < this.resumeLsn) {
      // Committed before the resume position: delivered before. The server does not send
      // these; dropping them keeps the promise that nothing before the offset repeats.
      skip = Number.POSITIVE_INFINITY;
    } else if (this.resume && commitLsn === this.resumeLsn) {
      skip = this.resume.changes ?? 0;
    }
    this.resume = undefined;
    this.open = {
      commitLsn,
      xid: message.xid,
      commitTime: Number((message.commitTime as bigint) / 1000n),
      changes: 0,
      skip,
    };
  }

  /**
   * True for a captured table, false for any other relation (an unknown one is reported once to
   * `unknownRelation`); throws for a captured name with another OID.
   */
  private captures(relation: Pgoutput.MessageRelation): boolean {
    const name = `${relation.schema}.${relation.name}`;
    const oid = relationOid(relation);
    const captured = this.options.tables.get(name);
    if (captured === oid) return true;
    if (captured !== undefined) {
      throw new Error(
        `publication "${this.options.publication}" sent a change of ${name} as relation OID ${oid}, but the table ` +
          `captured at start is relation OID ${captured}: it was dropped and re-created, or swapped by renames, while ` +
          'the task ran. The task captures one relation per name; restart it to capture the table that has the name now ' +
          '(changes written to it before were not captured).',
      );
    }
    if (!this.notCaptured.has(oid)) {
      this.notCaptured.add(oid);
      this.options.unknownRelation({ name, oid });
    }
    return false;
  }

  private change(
    op: RowChange['op'],
    lsn: bigint,
    relation: Pgoutput.MessageRelation,
    before: Record<string, unknown> | null,
    after: Record<string, unknown> | null,
  ): void {
    const tx = this.open;
    if (!tx) throw new Error(`pgoutput sent a ${op} change of ${relation.schema}.${relation.name} outside a transaction`);
    const index = ++tx.changes;
    if (index <= tx.skip || !this.captures(relation)) return;
    this.options.emit({
      op,
      schema: relation.schema,
      table: relation.name,
      before: before === null ? null : plain(before),
      after: after === null ? null : plain(after),
      identityColumns: relation.keyColumns,
      lsn,
      commitLsn: tx.commitLsn,
      xid: tx.xid,
      commitTime: tx.commitTime,
      offset: { lsn: formatLsn(tx.commitLsn), changes: index },
    });
  }
}

/** The relation OID as PostgreSQL prints it: the parser reads it as a signed 32-bit integer. */
function relationOid(relation: Pgoutput.MessageRelation): number {
  return relation.relationOid >>> 0;
}

/** The parser builds rows without a prototype and with `undefined` for unsent values. */
function plain(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) if (v !== undefined) out[k] = v;
  return out;
}
