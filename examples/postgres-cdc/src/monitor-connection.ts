import pg from 'pg';
import { TributaryError } from 'tributary-connect';

/**
 * How much longer than `query.timeout.ms` the server's `statement_timeout` and pg's connect
 * timeout are: the task's own timer must fire first, so that the error names the check and the
 * key, while the server still ends a query the task gave up on.
 */
const SERVER_GRACE_MS = 1000;
/** How long `close()` waits for a connection to end before it lets it go. */
const CLOSE_WAIT_MS = 1000;

/** What a {@link MonitorConnection} needs. */
export interface MonitorConnectionOptions {
  /** node-postgres settings of the server. */
  readonly client: pg.ClientConfig;
  /** `query.timeout.ms`: how long one use may take, opening the connection included. */
  readonly timeoutMs: number;
  /** `host:port/database`, for messages. */
  readonly server: string;
}

/**
 * A plain connection for the queries a task makes while it runs, opened when first needed and
 * again after it broke. Each use is bounded by `query.timeout.ms`: a query that hung (a lock held
 * on the catalog, a server that stopped answering) would otherwise hold back whatever waits for
 * it without a word. After a timeout the connection is closed, so that nothing queues behind the
 * query that hung, and a use that was queued on it fails naming the one that timed out.
 */
export class MonitorConnection {
  private client: pg.Client | undefined;
  /** The connection being opened, which uses that overlap share. */
  private opening: Opening | undefined;
  /** Clients closed because a use of them did not answer: what that use was. */
  private readonly timedOut = new WeakMap<pg.Client, string>();
  private closed = false;

  constructor(private readonly options: MonitorConnectionOptions) {}

  /** Runs `use` on the connection; `what` names it in errors ("the check of the publication"). */
  async run<T>(what: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
    const { timeoutMs, server } = this.options;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let started = false;
    const opened = this.open();
    const work = opened.ready.then((client) => {
      started = true;
      return use(client);
    });
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(
          new TributaryError(
            'POLL_FAILED',
            `PostgreSQL CDC on ${server}: ${what} did not answer within query.timeout.ms (${timeoutMs} ms); its ` +
              'connection was closed. A lock held on the catalog or a server that stopped answering are the usual ' +
              'causes; raise query.timeout.ms if the server is only slow.',
          ),
        );
      }, timeoutMs);
    });
    try {
      return await Promise.race([work, expired]);
    } catch (e) {
      if (timedOut) {
        // Settled later, or never: nobody waits for it any more.
        work.catch(() => {});
        if (opened.client !== undefined) this.drop(opened.client, what);
        throw e;
      }
      if (this.closed) throw this.closedError(e);
      const behind = opened.client === undefined ? undefined : this.timedOut.get(opened.client);
      if (behind !== undefined) {
        throw new TributaryError(
          'POLL_FAILED',
          `PostgreSQL CDC on ${server}: ${what} failed because its connection was closed: ${behind}, which ran on ` +
            `the same connection, did not answer within query.timeout.ms (${timeoutMs} ms).`,
          { cause: e },
        );
      }
      if (!started) {
        throw new TributaryError(
          'POLL_FAILED',
          `PostgreSQL CDC on ${server}: ${what} could not open its connection: ${e instanceof Error ? e.message : String(e)}`,
          { cause: e },
        );
      }
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the connection, one still opening too; later uses fail. Takes at most about a second. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    const opening = this.opening?.client;
    this.client = undefined;
    this.opening = undefined;
    if (opening !== undefined) destroySocket(opening, 'the task is stopping');
    if (client !== undefined) await endWithin(client, CLOSE_WAIT_MS);
  }

  private open(): Opening {
    if (this.closed) return { client: undefined, ready: Promise.reject(this.closedError()) };
    if (this.client !== undefined) return { client: this.client, ready: Promise.resolve(this.client) };
    if (this.opening === undefined) {
      const opening = this.connect();
      this.opening = opening;
      opening.ready.then(
        () => this.opened(opening),
        () => this.opened(opening),
      );
    }
    return this.opening;
  }

  private opened(opening: Opening): void {
    if (this.opening === opening) this.opening = undefined;
  }

  private connect(): Opening & { client: pg.Client } {
    const limit = this.options.timeoutMs + SERVER_GRACE_MS;
    const client = new pg.Client({
      ...this.options.client,
      connectionTimeoutMillis: limit,
      // The server ends a statement the task gave up on (a wait for a lock).
      statement_timeout: limit,
    });
    // A connection that breaks while idle is opened again at the next use.
    client.on('error', () => {
      if (this.client === client) this.client = undefined;
    });
    const ready = client.connect().then(() => {
      // Closed, or given up on by a use that timed out, while it opened: not for later uses.
      if (this.closed || this.timedOut.has(client)) {
        void endWithin(client, CLOSE_WAIT_MS);
        throw this.closed ? this.closedError() : new Error('the connection was given up on while it opened');
      }
      this.client = client;
      return client;
    });
    return { client, ready };
  }

  /** Closes a client a use timed out on (open, or still opening); the next use opens another. */
  private drop(client: pg.Client, what: string): void {
    this.timedOut.set(client, what);
    if (this.client === client) this.client = undefined;
    if (this.opening?.client === client) this.opening = undefined;
    // Its query hangs, or it is still opening: nothing to end politely.
    destroySocket(client, `${what} did not answer within query.timeout.ms`);
  }

  private closedError(cause?: unknown): TributaryError {
    return new TributaryError('POLL_FAILED', `PostgreSQL CDC on ${this.options.server}: the task is stopping`, { cause });
  }
}

/** A connection being opened, or open: its client (none once closed) and when it can take queries. */
interface Opening {
  readonly client: pg.Client | undefined;
  readonly ready: Promise<pg.Client>;
}

/**
 * Ends `client`, and destroys its socket when that takes longer than `ms`: pg ends an idle
 * connection by asking the server to close it, which a server that stopped answering never does.
 */
async function endWithin(client: pg.Client, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const ended = client.end().then(
    () => true,
    () => true,
  );
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const done = await Promise.race([ended, late]);
  clearTimeout(timer);
  if (!done) destroySocket(client, 'the server did not close the connection');
}

/**
 * Destroys the client's socket: a connect under way fails with `reason`, a query under way with
 * pg's "Connection terminated". pg 8 has no public call for this; its own end() and connect
 * timeout destroy the same stream.
 */
function destroySocket(client: pg.Client, reason: string): void {
  (client as unknown as { connection?: { stream?: { destroy(error?: Error): void } } }).connection?.stream?.destroy(
    new Error(reason),
  );
}
