/**
 * A cluster of `tributary distributed` worker processes on one machine, for integration tests
 * and the chaos run: each worker is a child process (the CLI from src/ through tsx) with its own
 * REST port, kept across restarts so a restarted worker has the same worker id.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type WatchedProcess, waitFor, watchProcess } from './child-output.js';
import { propertiesText } from './worker-files.js';

/**
 * A free TCP port on 127.0.0.1 (bound, then released), below Linux's ephemeral range
 * (32768-60999): a worker binds it only seconds later, and a port the kernel hands out to
 * outgoing connections meanwhile (every Kafka client opens some) would be taken by then.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error('no free port found in 20000-31999');
}

/** One worker of a {@link TestCluster}. */
export class ClusterWorker {
  process: WatchedProcess | undefined;
  /** Everything every run of this worker wrote to stderr (its log). */
  log = '';

  constructor(
    readonly index: number,
    readonly port: number,
    readonly configPath: string,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** `worker_id` in statuses. */
  get workerId(): string {
    return `127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.process !== undefined && this.process.child.exitCode === null && this.process.child.signalCode === null;
  }

  /** Starts the process, without waiting for anything. */
  launch(): WatchedProcess {
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'distributed', this.configPath], {
      cwd: process.cwd(),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TRIBUTARY_LOG_LEVEL: undefined },
    });
    const watched = watchProcess(child);
    child.stderr?.on('data', (d) => (this.log += d));
    this.process = watched;
    return watched;
  }

  /** Starts the process; resolves once its log has `until` (default: it has joined the group). */
  async start(timeoutMs = 60_000, until = 'group.joined'): Promise<void> {
    const before = this.log.length;
    const watched = this.launch();
    await waitFor(
      () => this.log.slice(before).includes(`"event":"${until}"`) || watched.child.exitCode !== null,
      timeoutMs,
      `worker ${this.index} to log ${until}`,
    );
    if (watched.child.exitCode !== null)
      throw new Error(`worker ${this.index} exited with ${watched.child.exitCode}:\n${watched.stderr()}`);
  }

  /** Sends `signal`; with SIGKILL or SIGTERM waits for the exit. */
  async signal(signal: NodeJS.Signals): Promise<number | null> {
    const p = this.process;
    if (p === undefined) return null;
    p.child.kill(signal);
    if (signal === 'SIGKILL' || signal === 'SIGTERM' || signal === 'SIGINT') return p.exited;
    return null;
  }

  /** Lines of its log (JSON) with `event`. */
  events(event: string): Array<Record<string, unknown>> {
    return this.log
      .split('\n')
      .filter((l) => l.includes(`"event":"${event}"`))
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return {};
        }
      });
  }
}

/** Settings of a {@link TestCluster}. */
export interface TestClusterOptions {
  readonly bootstrap: string;
  readonly workers: number;
  /** Extra worker settings (every worker). */
  readonly config?: Record<string, string>;
}

/** Workers sharing one group and fresh cluster topics. */
export class TestCluster {
  readonly topics: { config: string; offsets: string; status: string };

  private constructor(
    readonly workers: ClusterWorker[],
    readonly groupId: string,
    topics: { config: string; offsets: string; status: string },
  ) {
    this.topics = topics;
  }

  static async create(options: TestClusterOptions): Promise<TestCluster> {
    const dir = await mkdtemp(join(tmpdir(), 'tributary-cluster-'));
    const id = Math.random().toString(36).slice(2, 8);
    const groupId = `cluster-${id}`;
    const topics = { config: `${groupId}-configs`, offsets: `${groupId}-offsets`, status: `${groupId}-status` };
    const workers: ClusterWorker[] = [];
    for (let i = 0; i < options.workers; i++) {
      const port = await freePort();
      const path = join(dir, `worker-${i}.properties`);
      await writeFile(
        path,
        propertiesText({
          'bootstrap.servers': options.bootstrap,
          'group.id': groupId,
          'config.storage.topic': topics.config,
          'offset.storage.topic': topics.offsets,
          'status.storage.topic': topics.status,
          'config.storage.replication.factor': '1',
          'offset.storage.replication.factor': '1',
          'status.storage.replication.factor': '1',
          listeners: `http://127.0.0.1:${port}`,
          'session.timeout.ms': '4000',
          'heartbeat.interval.ms': '1000',
          'scheduled.rebalance.max.delay.ms': '8000',
          'offset.flush.interval.ms': '1000',
          'log.format': 'json',
          'log.level': 'info',
          'rest.plugin.module.paths.enable': 'true',
          ...options.config,
        }),
      );
      workers.push(new ClusterWorker(i, port, path));
    }
    return new TestCluster(workers, groupId, topics);
  }

  /** Starts every worker, one after the other. */
  async start(): Promise<void> {
    for (const w of this.workers) await w.start();
  }

  /** Kills what still runs (SIGKILL after SIGCONT, for a stopped one). */
  async destroy(): Promise<void> {
    await Promise.all(
      this.workers.map(async (w) => {
        if (!w.running) return;
        w.process?.child.kill('SIGCONT');
        w.process?.child.kill('SIGKILL');
        await w.process?.exited;
      }),
    );
  }
}

/** A JSON request to a worker's REST API. */
export async function rest(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: kept as text.
  }
  return { status: res.status, body: parsed };
}
