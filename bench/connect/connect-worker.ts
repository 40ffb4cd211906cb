/**
 * Starts a real Apache Kafka Connect worker (the jars of {@link ensureConnectJars}) as a child
 * process: the one way the benchmark, the compatibility tests and the fixture recorders run
 * Kafka Connect, so its JVM flags, logging and readiness check are written once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../test/kafka/broker.js';
import { checkJava, ensureConnectJars } from './fetch.js';

/** What {@link startConnectWorker} needs. */
export interface ConnectWorkerOptions {
  /** `ConnectStandalone` or `ConnectDistributed`. */
  readonly mode: 'standalone' | 'distributed';
  readonly bootstrap: string;
  /**
   * Worker properties beside `bootstrap.servers`, `listeners` and `plugin.discovery` (which this
   * sets). Standalone mode gets an `offset.storage.file.filename` in the worker's folder unless
   * given.
   */
  readonly properties: Readonly<Record<string, string | number>>;
  /** The REST path that answers 200 once the worker is ready (default `/connectors`). */
  readonly readyPath?: string;
  /** How long to wait for that answer (default 120 s). */
  readonly timeoutMs?: number;
  /** `inherit` shows Connect's own output; by default the last 200 chunks are kept in {@link ConnectWorker.output}. */
  readonly output?: 'keep' | 'inherit';
}

/** A running Kafka Connect worker. */
export interface ConnectWorker {
  readonly version: string;
  readonly url: string;
  /** Its last output chunks (empty with `output: 'inherit'`). */
  readonly output: readonly string[];
  /** Whether the process has exited. */
  exited(): boolean;
  /** Kills the process (SIGKILL) and removes its folder. */
  stop(): Promise<void>;
}

const LOG4J = [
  'status = warn',
  'appender.out.type = Console',
  'appender.out.name = OUT',
  'appender.out.layout.type = PatternLayout',
  'appender.out.layout.pattern = [%d] %p %m (%c)%n',
  'rootLogger.level = WARN',
  'rootLogger.appenderRef.out.ref = OUT',
  '',
].join('\n');

/**
 * Starts a Kafka Connect worker on a free port against `bootstrap`; resolves once
 * `readyPath` answers 200 (for `/connectors` in distributed mode: once it has joined the group
 * and read the config topic).
 *
 * @throws SetupError when Java or the jars are missing; Error with Connect's output when it exits or does not answer in time
 */
export async function startConnectWorker(opts: ConnectWorkerOptions): Promise<ConnectWorker> {
  const [{ java }, jars] = await Promise.all([checkJava(), ensureConnectJars()]);
  const dir = await mkdtemp(join(tmpdir(), `tributary-connect-${opts.mode}-`));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const worker = join(dir, 'worker.properties');
  const log4j = join(dir, 'log4j2.properties');
  const properties: Record<string, string | number> = {
    ...(opts.mode === 'standalone' ? { 'offset.storage.file.filename': join(dir, 'offsets') } : {}),
    ...opts.properties,
    'bootstrap.servers': opts.bootstrap,
    listeners: url,
    // Connect's own plugins declare themselves for ServiceLoader: no classpath scan, a faster start.
    'plugin.discovery': 'service_load',
  };
  await writeFile(
    worker,
    Object.entries(properties)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n'),
  );
  await writeFile(log4j, LOG4J);
  const main = opts.mode === 'standalone' ? 'ConnectStandalone' : 'ConnectDistributed';
  const child: ChildProcess = spawn(
    java,
    [
      '-Xms128M',
      '-Xmx512M',
      // Startup matters more than peak speed here: C1 only.
      '-XX:TieredStopAtLevel=1',
      `-Dlog4j2.configurationFile=${log4j}`,
      '-cp',
      `${jars.libs}/*`,
      `org.apache.kafka.connect.cli.${main}`,
      worker,
    ],
    { stdio: ['ignore', opts.output === 'inherit' ? 'inherit' : 'pipe', opts.output === 'inherit' ? 'inherit' : 'pipe'] },
  );
  const output: string[] = [];
  const keep = (b: Buffer): void => {
    output.push(b.toString('utf8'));
    if (output.length > 200) output.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const hasExited = () => child.exitCode !== null || child.signalCode !== null;
  const stop = async (): Promise<void> => {
    if (!hasExited()) {
      child.kill('SIGKILL');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const readyPath = opts.readyPath ?? '/connectors';
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (hasExited()) throw new Error(`Kafka Connect exited (${child.exitCode ?? child.signalCode}):\n${output.join('')}`);
      const up = await fetch(`${url}${readyPath}`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline) {
        throw new Error(`Kafka Connect did not answer ${readyPath} within ${timeoutMs / 1000} s:\n${output.join('')}`);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { version: jars.version, url, output, exited: hasExited, stop };
}
