import { createServer, type Server, type Socket } from 'node:net';
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
