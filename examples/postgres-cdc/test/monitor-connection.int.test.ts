import { connect, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresCdcConfig } from '../src/index.js';
import { MonitorConnection } from '../src/monitor-connection.js';
import { type PgCluster, startPgCluster } from './pg-cluster.js';

/**
 * The task's plain connection for checks and the lag query (`query.timeout.ms`), against a real
 * PostgreSQL: a lock held on pg_publication makes a catalog query wait for as long as it is held.
 */

let cluster: PgCluster;
let app = 0;

beforeAll(async () => {
  cluster = await startPgCluster();
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

/** A connection with its own application_name, so that the test can count its sessions. */
function connection(timeoutMs: number): { monitor: MonitorConnection; name: string } {
  const name = `monitor-test-${++app}`;
  const client = { connectionString: cluster.connectionString(), application_name: name };
  return { monitor: new MonitorConnection({ client, timeoutMs, server: 'scratch' }), name };
}

async function sessions(name: string): Promise<number> {
  const rows = await cluster.query<{ n: string }>(
    'SELECT count(*)::text AS n FROM pg_stat_activity WHERE application_name = $1',
    [name],
  );
  return Number(rows[0]?.n);
}

/** Holds an ACCESS EXCLUSIVE lock on pg_publication until `release()`. */
async function lockPublications(): Promise<{ release(): Promise<void> }> {
  const locker = new pg.Client({ connectionString: cluster.connectionString() });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE pg_catalog.pg_publication IN ACCESS EXCLUSIVE MODE');
  return {
    async release() {
      await locker.query('ROLLBACK');
      await locker.end();
    },
  };
}

const publications = (client: pg.Client) => client.query('SELECT count(*) FROM pg_publication');

async function until(what: string, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('MonitorConnection', () => {
  it('fails a use that does not answer in time with an error naming it and the key, on an open connection every time', async () => {
    const { monitor } = connection(500);
    await monitor.run('a first query', (c) => c.query('SELECT 1'));
    // The server's statement_timeout must not beat the task's own timer (it would name neither).
    for (let i = 0; i < 5; i++) {
      const lock = await lockPublications();
      try {
        await expect(monitor.run('the check of the publication', publications)).rejects.toThrow(
          /the check of the publication did not answer within query.timeout.ms \(500 ms\)/,
        );
      } finally {
        await lock.release();
      }
    }
    // Opened again at the next use.
    expect((await monitor.run('a later query', (c) => c.query<{ one: number }>('SELECT 1 AS one'))).rows[0]?.one).toBe(1);
    await monitor.close();
  });

  it('fails a use queued behind one that timed out naming the one that did, and opens the connection again', async () => {
    const { monitor } = connection(500);
    await monitor.run('a first query', (c) => c.query('SELECT 1'));
    const lock = await lockPublications();
    try {
      const hung = monitor.run('the check of the publication', publications);
      // Queued on the same connection later, so that its own time is not up when the first one's is.
      await new Promise((r) => setTimeout(r, 200));
      const queued = monitor.run('the lag query', (c) => c.query('SELECT 1'));
      await expect(hung).rejects.toMatchObject({ code: 'POLL_FAILED' });
      await expect(queued).rejects.toThrow(
        /the lag query failed because its connection was closed: the check of the publication, which ran on the same connection, did not answer within query.timeout.ms \(500 ms\)/,
      );
    } finally {
      await lock.release();
    }
    expect((await monitor.run('a later query', (c) => c.query<{ one: number }>('SELECT 1 AS one'))).rows[0]?.one).toBe(1);
    await monitor.close();
  });

  it('closes the connection of the use that timed out and leaves none behind after close()', async () => {
    const { monitor, name } = connection(500);
    const lock = await lockPublications();
    try {
      // Two uses that overlap while none is open share one connection.
      const a = monitor.run('a', publications);
      const b = monitor.run('b', (c) => c.query('SELECT 1'));
      await expect(a).rejects.toThrow(/a did not answer/);
      // b timed out as well or failed behind a; either way on a's connection, which is closed.
      await expect(b).rejects.toThrow(/b did not answer|b failed because its connection was closed: a, which ran/);
    } finally {
      await lock.release();
    }
    await monitor.run('c', (c) => c.query('SELECT 1'));
    await until('one session of the connection', async () => (await sessions(name)) === 1);
    await monitor.close();
    await until('no session of the connection', async () => (await sessions(name)) === 0);
    await expect(monitor.run('d', (c) => c.query('SELECT 1'))).rejects.toThrow(/the task is stopping/);
  });

  it('fails a use whose connection does not open in time with the same error, not pg’s', async () => {
    // A server that accepts the TCP connection and never answers.
    const held: Socket[] = [];
    const silent: Server = createServer((socket) => held.push(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    try {
      const monitor = new MonitorConnection({
        client: { host: '127.0.0.1', port, user: 'postgres', database: 'postgres' },
        timeoutMs: 500,
        server: `127.0.0.1:${port}/postgres`,
      });
      await expect(monitor.run('the check of the publication', publications)).rejects.toMatchObject({
        code: 'POLL_FAILED',
        message: expect.stringContaining('the check of the publication did not answer within query.timeout.ms (500 ms)'),
      });
      await monitor.close();
    } finally {
      for (const s of held) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});

/** A TCP server that accepts connections and never answers; `closed` counts the ones the client closed. */
async function silentServer(): Promise<{ port: number; closed(): number; stop(): Promise<void> }> {
  const held: Socket[] = [];
  let closed = 0;
  const server: Server = createServer((socket) => {
    held.push(socket);
    // Read (and drop) what the client sends, so that its closing shows as 'end' and 'close'.
    socket.resume();
    socket.on('close', () => closed++);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    closed: () => closed,
    async stop() {
      for (const s of held) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Forwards to the cluster until `freeze()`, then passes nothing on either way (a server that stopped answering). */
async function freezingProxy(): Promise<{ port: number; freeze(): void; clientClosed(): number; stop(): Promise<void> }> {
  const target = new URL(cluster.connectionString());
  const pairs: Array<[Socket, Socket]> = [];
  let frozen = false;
  let clientClosed = 0;
  // Half-open allowed: a client's end is not answered by closing, as a frozen server would not.
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = connect(Number(target.port), target.hostname);
    pairs.push([client, upstream]);
    client.on('close', () => clientClosed++);
    client.on('data', (d) => {
      if (!frozen) upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (!frozen) client.write(d);
    });
    // Frozen: the far side neither answers nor closes.
    client.on('end', () => {
      if (!frozen) upstream.end();
    });
    client.on('error', () => {});
    upstream.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    freeze: () => {
      frozen = true;
    },
    clientClosed: () => clientClosed,
    async stop() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

describe('MonitorConnection, a server that never answers', () => {
  it('fails a use that joined the opening of another that timed out naming that one, not with pg’s error', async () => {
    const silent = await silentServer();
    try {
      const monitor = new MonitorConnection({
        client: { host: '127.0.0.1', port: silent.port, user: 'postgres', database: 'postgres' },
        timeoutMs: 500,
        server: 'silent',
      });
      const a = monitor.run('a', publications);
      await new Promise((r) => setTimeout(r, 200));
      const b = monitor.run('b', publications);
      await expect(a).rejects.toThrow(/a did not answer within query.timeout.ms/);
      await expect(b).rejects.toMatchObject({
        code: 'POLL_FAILED',
        message: expect.stringContaining('b failed because its connection was closed: a, which ran on the same connection'),
      });
      await monitor.close();
    } finally {
      await silent.stop();
    }
  });
});

describe('MonitorConnection.close()', () => {
  it('ends a connection still opening at once, and the use waiting for it fails saying the task is stopping', async () => {
    const silent = await silentServer();
    try {
      const monitor = new MonitorConnection({
        client: { host: '127.0.0.1', port: silent.port, user: 'postgres', database: 'postgres' },
        timeoutMs: 30_000,
        server: 'silent',
      });
      const use = monitor.run('the check of the publication', publications);
      await new Promise((r) => setTimeout(r, 200));
      const started = Date.now();
      await monitor.close();
      await expect(use).rejects.toThrow(/the task is stopping/);
      expect(Date.now() - started).toBeLessThan(1500);
      await until('the socket closed', async () => silent.closed() === 1);
    } finally {
      await silent.stop();
    }
  });

  it('closes the socket of an idle connection whose server stopped answering within about a second', async () => {
    const proxy = await freezingProxy();
    try {
      const target = new URL(cluster.connectionString());
      const monitor = new MonitorConnection({
        client: { host: '127.0.0.1', port: proxy.port, user: target.username || 'postgres', database: 'postgres' },
        timeoutMs: 30_000,
        server: 'proxied',
      });
      await monitor.run('a first query', (c) => c.query('SELECT 1'));
      // This process's sockets: the connection's, and the proxy's two for it among them.
      const sockets = () => process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
      const open = sockets();
      proxy.freeze();
      const started = Date.now();
      await monitor.close();
      expect(Date.now() - started).toBeLessThan(2500);
      // pg's end() only half-closes and waits for the server, which never closes here.
      await until("the connection's socket gone", async () => sockets() === open - 1);
    } finally {
      await proxy.stop();
    }
  });
});

describe('query.timeout.ms', () => {
  it('takes 1 to 2147483647 and refuses 0 and what Node’s timers cannot wait', () => {
    const parse = (v: unknown) => postgresCdcConfig.parse({ tables: 't', 'topic.prefix': 'p', 'query.timeout.ms': v });
    expect(parse(2_147_483_647).ok).toBe(true);
    for (const bad of [0, -5, 2_147_483_648, Number.MAX_SAFE_INTEGER]) {
      const parsed = parse(bad);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.problems[0]?.message).toContain('integer from 1 to 2147483647');
    }
  });
});
