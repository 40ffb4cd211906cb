/**
 * A throwaway PostgreSQL cluster for tests: `initdb` into a temporary folder, `wal_level=logical`,
 * listening on 127.0.0.1 and a free port (unix socket in the same folder), stopped and removed
 * by {@link PgCluster.stop}.
 *
 * PostgreSQL refuses to run as root, so when the tests run as root the cluster is created and
 * run as the `postgres` OS user (via `runuser`), and the folder is handed to that user.
 */
import { execFile } from 'node:child_process';
import { chmod, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** Options of {@link startPgCluster}. */
export interface PgClusterOptions {
  /** Extra `postgresql.conf` lines, e.g. `{ max_wal_size: '256MB' }`. */
  readonly settings?: Readonly<Record<string, string>>;
}

/** A running test cluster. */
export interface PgCluster {
  readonly host: string;
  readonly port: number;
  /** Superuser with trust authentication. */
  readonly user: string;
  /** Where the data folder, the socket and the server log live. */
  readonly dir: string;
  /** A connection string for `database` (default `postgres`). */
  connectionString(database?: string): string;
  /** Runs one statement on a fresh connection to `postgres` (or `database`) and returns its rows. */
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    sql: string,
    params?: unknown[],
    database?: string,
  ): Promise<R[]>;
  /** The server log so far, for failure messages. */
  log(): Promise<string>;
  /** Stops the server (fast shutdown) and removes the folder. Safe to call twice. */
  stop(): Promise<void>;
}

const BIN_DIRS = ['/usr/lib/postgresql/15/bin', '/usr/local/bin'];

/** Starts a cluster with `wal_level=logical` on a free port; call `stop()` when done. */
export async function startPgCluster(options: PgClusterOptions = {}): Promise<PgCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'tributary-pg-'));
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  const asRoot = process.getuid?.() === 0;
  const user = 'postgres';
  if (asRoot) {
    const { stdout } = await run('id', ['-u', user]);
    const { stdout: gid } = await run('id', ['-g', user]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  await chmod(dir, 0o700);
  const exec = async (tool: string, args: string[]) => {
    const path = await findTool(tool);
    return asRoot ? run('runuser', ['-u', user, '--', path, ...args]) : run(path, args);
  };

  const port = await freePort();
  await exec('initdb', ['-D', data, '-U', user, '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  const settings: Record<string, string> = {
    wal_level: 'logical',
    max_replication_slots: '10',
    max_wal_senders: '10',
    listen_addresses: "'127.0.0.1'",
    port: String(port),
    unix_socket_directories: `'${dir}'`,
    fsync: 'off',
    full_page_writes: 'off',
    shared_buffers: '32MB',
    max_connections: '30',
    log_min_messages: 'warning',
    ...options.settings,
  };
  const conf = join(data, 'postgresql.conf');
  const base = await readFile(conf, 'utf8');
  await writeFile(
    conf,
    `${base}\n${Object.entries(settings)
      .map(([k, v]) => `${k} = ${v}`)
      .join('\n')}\n`,
  );

  let stopped = false;
  const cluster: PgCluster = {
    host: '127.0.0.1',
    port,
    user,
    dir,
    connectionString: (database = 'postgres') => `postgresql://${user}@127.0.0.1:${port}/${database}`,
    async query(sql, params, database = 'postgres') {
      const client = new pg.Client({ host: '127.0.0.1', port, user, database });
      await client.connect();
      try {
        return (await client.query(sql, params)).rows;
      } finally {
        await client.end();
      }
    },
    log: () => readFile(logFile, 'utf8').catch(() => ''),
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        await exec('pg_ctl', ['stop', '-D', data, '-m', 'fast', '-w', '-t', '60']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
  try {
    await exec('pg_ctl', ['start', '-D', data, '-l', logFile, '-w', '-t', '60']);
  } catch (e) {
    const log = await cluster.log();
    await rm(dir, { recursive: true, force: true });
    throw new Error(`PostgreSQL test cluster did not start: ${(e as Error).message}\n${log}`);
  }
  return cluster;
}

async function findTool(tool: string): Promise<string> {
  for (const dir of BIN_DIRS) {
    const path = join(dir, tool);
    try {
      await run(path, ['--version']);
      return path;
    } catch {
      // not there: try the next folder
    }
  }
  throw new Error(`${tool} not found in ${BIN_DIRS.join(' or ')}: install PostgreSQL 15 server binaries`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
