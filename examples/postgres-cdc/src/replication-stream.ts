import pg from 'pg';
import { type Pgoutput, PgoutputPlugin } from 'pg-logical-replication';
import { formatLsn, maxLsn } from './lsn.js';
import { keepServerText } from './server-text-types.js';

/** What a {@link ReplicationStream} reports, as it arrives. */
export interface ReplicationHandlers {
  /** A pgoutput message (XLogData). `lsn` is the message's WAL start (0 for relation and type messages). */
  message(lsn: bigint, message: Pgoutput.Message): void;
  /**
   * A primary keepalive: `walEnd` is the position the server has read and decoded up to.
   * With `replyRequested` the server drops the connection at `wal_sender_timeout` unless it
   * gets a status update; answer with {@link ReplicationStream.confirm}.
   */
  keepalive(walEnd: bigint, replyRequested: boolean): void;
  /** The stream failed or the server ended it. Not called after {@link ReplicationStream.close}. */
  failed(error: Error): void;
}

/** Options of {@link ReplicationStream.open}. */
export interface ReplicationStreamOptions {
  readonly client: pg.ClientConfig;
  readonly slot: string;
  readonly publication: string;
  /** Where the server starts: transactions that committed before it are not sent. */
  readonly startLsn: bigint;
  readonly handlers: ReplicationHandlers;
  /** Milliseconds since the epoch, for the status update's clock field; default `Date.now`. */
  readonly now?: () => number;
}

type WireConnection = pg.Connection & { sendCopyFromChunk(chunk: Buffer): void; endCopyFrom(): void };

/** Microseconds from the Unix epoch to PostgreSQL's (2000-01-01). */
const PG_EPOCH_MICROS = 946_684_800_000_000n;

/**
 * A logical replication connection reading one slot with pgoutput: the walsender protocol
 * (XLogData, primary keepalive, standby status update) over node-postgres, with the pgoutput
 * decoder of `pg-logical-replication`.
 *
 * Unlike `pg-logical-replication`'s own service it sends a status update only when told, with
 * exactly the flush position given: that service's timer acknowledges whatever it saw last,
 * keepalives included, adds one byte to every position, and resumes from its memory on
 * re-subscribe. Here the caller decides what the server may free, and where to start.
 *
 * @example
 * ```ts
 * const stream = await ReplicationStream.open({ client, slot: 'cdc', publication: 'cdc', startLsn, handlers });
 * // after an offset flush:
 * stream.confirm(committedLsn);
 * await stream.close();
 * ```
 */
export class ReplicationStream {
  private readonly client: pg.Client;
  private readonly decoder: PgoutputPlugin;
  private connection: WireConnection | undefined;
  private received: bigint;
  private flushed: bigint;
  private streaming = false;
  private closing = false;
  private done: Promise<void> = Promise.resolve();
  private startFailure: ((error: Error) => void) | undefined;

  private constructor(private readonly options: ReplicationStreamOptions) {
    this.client = new pg.Client({ ...options.client, replication: 'database' } as pg.ClientConfig);
    this.decoder = new PgoutputPlugin({ protoVersion: 1, publicationNames: [options.publication] });
    this.received = options.startLsn;
    this.flushed = options.startLsn;
  }

  /**
   * Connects with `replication=database` and runs `START_REPLICATION SLOT ... LOGICAL <startLsn>`.
   * Resolves once the server streams; rejects with the server's error (e.g. the slot does not
   * exist or is in use) otherwise.
   */
  static async open(options: ReplicationStreamOptions): Promise<ReplicationStream> {
    const stream = new ReplicationStream(options);
    await stream.start();
    return stream;
  }

  /** The server process (walsender) serving this stream. */
  get processId(): number {
    return (this.client as unknown as { processID: number }).processID;
  }

  /** The highest position received so far (XLogData start or keepalive WAL end). */
  get receivedLsn(): bigint {
    return this.received;
  }

  /** The flush position last reported to the server. */
  get confirmedLsn(): bigint {
    return this.flushed;
  }

  /**
   * Sends a standby status update with flush = apply = `lsn` (never lower than what was
   * reported before): the slot's `confirmed_flush_lsn` becomes `lsn` and the server may free
   * the WAL before it. Report only what is durable.
   */
  confirm(lsn: bigint): void {
    if (this.closing || !this.connection) return;
    this.flushed = maxLsn(this.flushed, lsn);
    const message = Buffer.alloc(34);
    message.write('r', 0, 'latin1');
    message.writeBigUInt64BE(maxLsn(this.received, this.flushed), 1); // written
    message.writeBigUInt64BE(this.flushed, 9); // flushed
    message.writeBigUInt64BE(this.flushed, 17); // applied
    const now = BigInt(Math.floor((this.options.now ?? Date.now)())) * 1000n - PG_EPOCH_MICROS;
    message.writeBigInt64BE(now, 25);
    message.writeUInt8(0, 33);
    this.connection.sendCopyFromChunk(message);
  }

  /** Stops reading from the server (TCP backpressure); the server waits. */
  pause(): void {
    this.connection?.stream.pause();
  }

  /** Reads from the server again. */
  resume(): void {
    this.connection?.stream.resume();
  }

  /**
   * Ends replication cleanly (CopyDone, then waits for the server to finish the command, by
   * which time it has released the slot) and disconnects. A server that does not answer within
   * `timeoutMs` (wall-clock: a network timeout, whatever clock the task runs on) is just
   * disconnected; it then releases the slot when it notices.
   */
  async close(timeoutMs = 10_000): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    try {
      if (this.streaming && this.connection) {
        this.connection.stream.resume();
        this.connection.endCopyFrom();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([this.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
        clearTimeout(timer);
      }
    } finally {
      await this.client.end().catch(() => {});
    }
  }

  private async start(): Promise<void> {
    const { slot, publication, startLsn } = this.options;
    const failure = new Promise<never>((_, reject) => {
      this.startFailure = reject;
    });
    failure.catch(() => {});
    this.client.on('error', (e: Error) => this.fail(e));
    try {
      await this.client.connect();
      const connection = (this.client as unknown as { connection: WireConnection }).connection;
      this.connection = connection;
      // Attached before START_REPLICATION: the first messages can come in the same packet as its reply.
      connection.on('copyData', ({ chunk }: { chunk: Buffer }) => this.receive(chunk));
      const started = new Promise<void>((resolve) =>
        connection.once('replicationStart', () => {
          this.streaming = true;
          resolve();
        }),
      );
      const sql =
        `START_REPLICATION SLOT ${pg.escapeIdentifier(slot)} LOGICAL ${formatLsn(startLsn)} ` +
        `(proto_version '1', publication_names ${pg.escapeLiteral(pg.escapeIdentifier(publication))})`;
      this.done = this.client.query(sql).then(
        () => this.fail(new Error(`The server ended replication from slot "${slot}"`)),
        (e: unknown) => this.fail(e instanceof Error ? e : new Error(String(e))),
      );
      await Promise.race([started, failure]);
      this.startFailure = undefined;
    } catch (e) {
      this.closing = true;
      await this.client.end().catch(() => {});
      throw e;
    }
  }

  private fail(error: Error): void {
    if (this.closing) return;
    if (this.startFailure) this.startFailure(error);
    else this.options.handlers.failed(error);
  }

  private receive(chunk: Buffer): void {
    if (this.closing) return;
    try {
      const kind = chunk[0];
      if (kind === 0x77 /* w: XLogData */) {
        const start = chunk.readBigUInt64BE(1);
        if (start > this.received) this.received = start;
        const message = this.decoder.parse(chunk.subarray(25));
        if (message.tag === 'relation') keepServerText(message);
        this.options.handlers.message(start, message);
      } else if (kind === 0x6b /* k: primary keepalive */) {
        const walEnd = chunk.readBigUInt64BE(1);
        if (walEnd > this.received) this.received = walEnd;
        this.options.handlers.keepalive(walEnd, chunk[17] === 1);
      }
    } catch (e) {
      this.fail(e instanceof Error ? e : new Error(String(e)));
    }
  }
}
