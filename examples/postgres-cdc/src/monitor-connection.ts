import { setTimeout as sleep } from 'node:timers/promises';
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
  private opening: Promise<pg.Client> | undefined;
  /** Clients closed because a use of them did not answer: what that use was. */
  private readonly timedOut = new WeakMap<pg.Client, string>();
  private closed = false;

  constructor(private readonly options: MonitorConnectionOptions) {}

  /** Runs `use` on the connection; `what` names it in errors ("the check of the publication"). */
  async run<T>(what: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
    const { timeoutMs, server } = this.options;
    let used: pg.Client | undefined;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const opening = this.open();
    const work = opening.then((client) => {
      used = client;
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
        if (used !== undefined) this.drop(used, what);
        else
          opening.then(
            (client) => this.drop(client, what),
            () => {},
          );
        throw e;
      }
      const behind = used === undefined ? undefined : this.timedOut.get(used);
      if (behind !== undefined) {
        throw new TributaryError(
          'POLL_FAILED',
          `PostgreSQL CDC on ${server}: ${what} failed because its connection was closed: ${behind}, which ran on ` +
            `the same connection, did not answer within query.timeout.ms (${timeoutMs} ms).`,
          { cause: e },
        );
      }
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes the connection; later uses fail. Waits at most about a second for it to end. */
  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    if (client !== undefined) await Promise.race([client.end().catch(() => {}), sleep(CLOSE_WAIT_MS)]);
  }

  private open(): Promise<pg.Client> {
    if (this.closed) return Promise.reject(this.closedError());
    if (this.client !== undefined) return Promise.resolve(this.client);
    // Uses that overlap share one connection, not one each.
    this.opening ??= this.connect().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  private async connect(): Promise<pg.Client> {
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
    await client.connect();
    if (this.closed) {
      // close() ran while it opened.
      client.end().catch(() => {});
      throw this.closedError();
    }
    this.client = client;
    return client;
  }

  private drop(client: pg.Client, what: string): void {
    this.timedOut.set(client, what);
    if (this.client === client) this.client = undefined;
    client.end().catch(() => {});
  }

  private closedError(): TributaryError {
    return new TributaryError('POLL_FAILED', `PostgreSQL CDC on ${this.options.server}: the task is stopping`);
  }
}
