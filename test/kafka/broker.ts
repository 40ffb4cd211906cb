/**
 * A real single-node Apache Kafka broker (KRaft, broker+controller in one JVM) for tests and
 * benchmarks, run straight from Apache Kafka's jars on Maven Central: no Docker, no
 * distribution tarball, no shell scripts.
 *
 * - Jars: `mvn dependency:copy-dependencies` on `test/kafka/pom.xml` into
 *   `test/kafka/.cache/<version>/libs` (once; later runs use the cache and need no network).
 * - Storage: formatted with `kafka.tools.StorageTool format` the first time a data dir is used.
 * - Broker: `java -cp 'libs/*' kafka.Kafka server.properties`, listening on 127.0.0.1 only.
 *
 * As a library: `const broker = await startBroker(); ... await broker.destroy();`
 * As a command: `npx tsx test/kafka/broker.ts start` prints the bootstrap servers on stdout and
 * runs until SIGINT/SIGTERM. See test/kafka/README.md.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { generateTestCertificates, type TestCertificates } from './certificates.js';
import { mavenCopyDependencies, runCommand as run } from './maven-copy.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const POM = join(HERE, 'pom.xml');

/**
 * The Kafka version used: `TRIBUTARY_KAFKA_VERSION` if set, else `<kafka.version>` in
 * test/kafka/pom.xml.
 */
export const KAFKA_VERSION: string = process.env.TRIBUTARY_KAFKA_VERSION ?? pomKafkaVersion();

/** Where the jars of each Kafka version are kept: `test/kafka/.cache/<version>/libs`. */
export const KAFKA_CACHE_DIR: string = join(HERE, '.cache');

/** Options of {@link startBroker}. Every one has a sensible default. */
export interface StartBrokerOptions {
  /** Client (PLAINTEXT) port on 127.0.0.1; default: a free port. */
  port?: number;
  /** KRaft controller port on 127.0.0.1; default: a free port. */
  controllerPort?: number;
  /**
   * Holds server.properties, the log4j2 config, the pid file and the Kafka log dir. Default: a
   * new temporary directory, removed by {@link KafkaBroker.destroy}. A given dir is reused as
   * is (formatted only if it has never been) and never removed.
   */
  dataDir?: string;
  /** JVM heap (-Xms and -Xmx) in MiB; default 512. */
  heapMb?: number;
  /** Where the broker's stdout/stderr (its log4j output) go; default `<dataDir>/broker.log`. */
  logFile?: string;
  /** How long to wait for the broker to answer; default 60 s (env `TRIBUTARY_KAFKA_START_TIMEOUT_MS`). */
  startTimeoutMs?: number;
  /** Extra or overriding server.properties entries, e.g. `{ 'auto.create.topics.enable': 'false' }`. */
  serverProperties?: Record<string, string>;
  /**
   * Also open the secure listeners of {@link SecureListeners} (TLS, SASL, mutual TLS), with test
   * certificates generated into `<dataDir>/certs` and the SCRAM users of {@link SCRAM_USERS}
   * created at storage format time. Default false.
   */
  secure?: boolean;
}

/** The SASL users of a secure test broker: user -> password (PLAIN and both SCRAM mechanisms). */
export const SASL_USERS: Readonly<Record<string, string>> = { alice: 'alice-secret' };

/** The secure listeners of a broker started with `secure: true`, each as `127.0.0.1:<port>`. */
export interface SecureListeners {
  /** SSL, server authentication only. */
  readonly ssl: string;
  /** SASL_SSL with PLAIN. */
  readonly saslPlain: string;
  /** SASL_SSL with SCRAM-SHA-256 and SCRAM-SHA-512. */
  readonly scram: string;
  /** SSL with `ssl.client.auth=required` (mutual TLS). */
  readonly mtls: string;
  /** SASL_SSL with OAUTHBEARER, Kafka's unsecured-token validator (tests only). */
  readonly oauth: string;
  /** SSL whose certificate names `wrong.example`, not 127.0.0.1 (host-name mismatch). */
  readonly wrongHost: string;
  /** SSL whose certificate (for 127.0.0.1, signed by the test CA) expired a day ago. */
  readonly expired: string;
}

const SECURE_LISTENER_NAMES = {
  ssl: 'SSL',
  saslPlain: 'SASLPLAIN',
  scram: 'SCRAM',
  mtls: 'MTLS',
  oauth: 'OAUTH',
  wrongHost: 'WRONGHOST',
  expired: 'EXPIRED',
} as const satisfies Record<keyof SecureListeners, string>;

/** A running (or stopped) broker started by {@link startBroker}. */
export interface KafkaBroker {
  /** `127.0.0.1:<port>`: the value for kafkajs `brokers` / `bootstrap.servers`. */
  readonly bootstrapServers: string;
  readonly port: number;
  readonly controllerPort: number;
  readonly dataDir: string;
  readonly logFile: string;
  /** Pid of the JVM while it runs, else undefined. */
  readonly pid: number | undefined;
  /** True between a successful start and the process's exit. */
  readonly running: boolean;
  /** The secure listeners, when started with `secure: true`. */
  readonly secure: { readonly listeners: SecureListeners; readonly certificates: TestCertificates } | undefined;
  /** Starts the broker again on the same ports and data dir (after {@link stop} or {@link kill}). */
  start(): Promise<void>;
  /** SIGTERM (clean, controlled shutdown), waits for exit; SIGKILL after `timeoutMs` (default 30 s). */
  stop(timeoutMs?: number): Promise<void>;
  /** SIGKILL, as a crash would; waits for exit. */
  kill(): Promise<void>;
  /** {@link stop}, then removes the data dir if {@link startBroker} created it. */
  destroy(): Promise<void>;
}

/** Every live broker JVM of this process, killed if the process exits without stopping them. */
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Starts a single-node KRaft broker on 127.0.0.1 and resolves once a client can talk to it
 * (kafkajs describeCluster lists the broker). Fetches the jars first if they are not cached.
 * Rejects, with the tail of the broker log, if the broker exits or does not answer in time.
 */
export async function startBroker(opts: StartBrokerOptions = {}): Promise<KafkaBroker> {
  const javaCheck = await checkJava();
  const libs = await ensureKafkaJars();
  const ownsDataDir = opts.dataDir === undefined;
  const dataDir = opts.dataDir === undefined ? await mkdtemp(join(tmpdir(), 'tributary-kafka-')) : resolve(opts.dataDir);
  await mkdir(dataDir, { recursive: true });
  const port = opts.port ?? (await freePort());
  const controllerPort = opts.controllerPort ?? (await freePort([port]));
  const logFile = opts.logFile === undefined ? join(dataDir, 'broker.log') : resolve(opts.logFile);
  const heapMb = opts.heapMb ?? 512;
  const startTimeoutMs = opts.startTimeoutMs ?? Number(process.env.TRIBUTARY_KAFKA_START_TIMEOUT_MS ?? 60_000);
  const bootstrapServers = `127.0.0.1:${port}`;

  const paths = {
    props: join(dataDir, 'server.properties'),
    log4j: join(dataDir, 'log4j2.properties'),
    toolsLog4j: join(dataDir, 'log4j2-tools.properties'),
    kafkaLogs: join(dataDir, 'kafka-logs'),
    pidFile: join(dataDir, 'broker.pid'),
  };
  await refuseIfAlreadyRunning(paths.pidFile, dataDir);
  let secure: KafkaBroker['secure'];
  let secureProps: Record<string, string> = {};
  if (opts.secure) {
    const certificates = await generateTestCertificates(join(dataDir, 'certs'));
    const used = [port, controllerPort];
    const ports = {} as Record<keyof SecureListeners, number>;
    for (const name of Object.keys(SECURE_LISTENER_NAMES) as Array<keyof SecureListeners>) {
      ports[name] = await freePort(used);
      used.push(ports[name]);
    }
    const listeners = Object.fromEntries(
      Object.entries(ports).map(([name, p]) => [name, `127.0.0.1:${p}`]),
    ) as unknown as SecureListeners;
    secure = { listeners, certificates };
    secureProps = secureServerProperties(port, controllerPort, ports, certificates);
  }
  await writeFile(
    paths.props,
    serverProperties(port, controllerPort, paths.kafkaLogs, { ...secureProps, ...opts.serverProperties }),
  );
  await writeFile(paths.log4j, log4jConfig('INFO'));
  await writeFile(paths.toolsLog4j, log4jConfig('WARN'));
  const classpath = `${libs}/*`;
  const java = javaCheck;

  if (!existsSync(join(paths.kafkaLogs, 'meta.properties'))) {
    const clusterId = randomClusterId();
    const result = await run(java, [
      `-Dlog4j2.configurationFile=${paths.toolsLog4j}`,
      '-cp',
      classpath,
      'kafka.tools.StorageTool',
      'format',
      '-t',
      clusterId,
      '-c',
      paths.props,
      ...(opts.secure
        ? Object.entries(SASL_USERS).flatMap(([name, password]) =>
            ['SCRAM-SHA-256', 'SCRAM-SHA-512'].flatMap((m) => ['--add-scram', `${m}=[name=${name},password=${password}]`]),
          )
        : []),
    ]);
    if (result.code !== 0) {
      throw new Error(`Formatting Kafka storage in ${paths.kafkaLogs} failed (exit ${result.code}):\n${tail(result.output, 30)}`);
    }
  }

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const spawnBroker = async (): Promise<void> => {
    if (child !== undefined) throw new Error(`Broker ${bootstrapServers} is already running (pid ${child.pid})`);
    const fd = openSync(logFile, 'a');
    let proc: ChildProcess;
    try {
      proc = spawn(
        java,
        [
          `-Xms${heapMb}m`,
          `-Xmx${heapMb}m`,
          '-XX:+UseG1GC',
          '-XX:MaxGCPauseMillis=20',
          '-XX:+ExitOnOutOfMemoryError',
          '-Djava.awt.headless=true',
          `-Dlog4j2.configurationFile=${paths.log4j}`,
          `-Dkafka.logs.dir=${dataDir}`,
          '-cp',
          classpath,
          'kafka.Kafka',
          paths.props,
        ],
        { stdio: ['ignore', fd, fd], cwd: dataDir },
      );
    } finally {
      closeSync(fd);
    }
    child = proc;
    liveChildren.add(proc);
    installExitHook();
    // The JVM must not hold this process open (a test worker ends when its tests end; the
    // exit hook then kills the JVM), nor outlive it: see startWatchdog.
    proc.unref();
    if (proc.pid !== undefined) startWatchdog(proc.pid);
    exited = new Promise<void>((resolveExit) => {
      proc.once('exit', () => {
        liveChildren.delete(proc);
        if (child === proc) child = undefined;
        rm(paths.pidFile, { force: true }).catch(() => {});
        resolveExit();
      });
    });
    proc.once('error', () => {
      // 'exit' may not follow a spawn error; make sure waiters are released.
      liveChildren.delete(proc);
      if (child === proc) child = undefined;
    });
    if (proc.pid !== undefined) await writeFile(paths.pidFile, `${proc.pid}\n`);
    try {
      await waitUntilReady(bootstrapServers, startTimeoutMs, () => child !== proc);
    } catch (e) {
      if (child === proc) {
        proc.kill('SIGKILL');
        await exited;
      }
      const log = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '(no log file)';
      const reason = e instanceof Error ? e.message : String(e);
      throw new Error(`Kafka broker ${bootstrapServers} did not start: ${reason}. Log ${logFile} ends with:\n${tail(log, 40)}`);
    }
  };

  const signalAndWait = async (signal: NodeJS.Signals, timeoutMs: number): Promise<void> => {
    const proc = child;
    if (proc === undefined) return;
    proc.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((r) => {
        timer = setTimeout(() => r(true), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut && child === proc) {
      proc.kill('SIGKILL');
      await exited;
    }
  };

  const broker: KafkaBroker = {
    bootstrapServers,
    port,
    controllerPort,
    dataDir,
    logFile,
    get pid() {
      return child?.pid;
    },
    get running() {
      return child !== undefined;
    },
    secure,
    start: spawnBroker,
    stop: (timeoutMs = 30_000) => signalAndWait('SIGTERM', timeoutMs),
    kill: () => signalAndWait('SIGKILL', 10_000),
    destroy: async () => {
      await signalAndWait('SIGTERM', 30_000);
      if (ownsDataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };

  try {
    await spawnBroker();
  } catch (e) {
    if (ownsDataDir) {
      // Keep the log, the only clue, when it lives in the temp data dir about to be removed.
      if (logFile.startsWith(`${dataDir}/`)) {
        const keep = join(tmpdir(), `tributary-kafka-failed-${Date.now()}.log`);
        await rename(logFile, keep).catch(() => {});
        if (e instanceof Error) e.message += `\n(broker log moved to ${keep})`;
      }
      await rm(dataDir, { recursive: true, force: true });
    }
    throw e;
  }
  return broker;
}

/**
 * Makes sure the jars of `version` are in `test/kafka/.cache/<version>/libs` and returns that
 * directory. Runs Maven (offline first, so a filled ~/.m2 needs no network) only when the
 * cache is missing; the copy is made in a temporary dir and renamed, so an interrupted fetch
 * never leaves a half-filled cache behind.
 */
export async function ensureKafkaJars(version: string = KAFKA_VERSION): Promise<string> {
  const libs = join(KAFKA_CACHE_DIR, version, 'libs');
  const marker = `kafka_2.13-${version}.jar`;
  if (await hasFile(libs, marker)) return libs;

  const fetched = await mavenCopyDependencies(POM, version, libs, (dir) => hasFile(dir, marker));
  if (!fetched.ok) {
    const { code, output } = fetched.result;
    throw new Error(
      `Could not fetch Kafka ${version} jars with Maven (exit ${code}): ${code === 127 ? 'mvn is not installed' : tail(output, 20)}`,
    );
  }
  return libs;
}

/** The single-node KRaft server.properties used by {@link startBroker}. */
export function serverProperties(
  port: number,
  controllerPort: number,
  logDir: string,
  overrides: Record<string, string> = {},
): string {
  const props: Record<string, string> = {
    'process.roles': 'broker,controller',
    'node.id': '1',
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${port}`,
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': logDir,
    // Kafka's own default, kept so a producer to a missing topic behaves as against a stock
    // broker (topic.creation.* tests check partition counts, which auto-creation would not match).
    'auto.create.topics.enable': 'true',
    'num.partitions': '1',
    'default.replication.factor': '1',
    'min.insync.replicas': '1',
    'offsets.topic.replication.factor': '1',
    'offsets.topic.num.partitions': '1',
    'transaction.state.log.replication.factor': '1',
    'transaction.state.log.min.isr': '1',
    'transaction.state.log.num.partitions': '1',
    'share.coordinator.state.topic.replication.factor': '1',
    'share.coordinator.state.topic.min.isr': '1',
    'group.initial.rebalance.delay.ms': '0',
    // Worker-group tests use a 2 s session so that a frozen member is dropped quickly (default minimum 6 s).
    'group.min.session.timeout.ms': '1000',
    // Let tests of compacted topics see compaction without waiting long.
    'log.cleaner.backoff.ms': '1000',
    // After kill() the restarted broker must wait for its old registration to expire before it
    // may register again: 4 s instead of 9 s (heartbeats every second instead of 2).
    'broker.session.timeout.ms': '4000',
    'broker.heartbeat.interval.ms': '1000',
    ...overrides,
  };
  return `${Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;
}

/** server.properties entries of the secure listeners (see {@link SecureListeners}). */
function secureServerProperties(
  port: number,
  controllerPort: number,
  ports: Record<keyof SecureListeners, number>,
  certs: TestCertificates,
): Record<string, string> {
  const names = Object.entries(SECURE_LISTENER_NAMES) as Array<[keyof SecureListeners, string]>;
  const protocolOf = (name: keyof SecureListeners) =>
    name === 'saslPlain' || name === 'scram' || name === 'oauth' ? 'SASL_SSL' : 'SSL';
  const users = Object.entries(SASL_USERS)
    .map(([u, p]) => `user_${u}="${p}"`)
    .join(' ');
  return {
    listeners: [
      `PLAINTEXT://127.0.0.1:${port}`,
      `CONTROLLER://127.0.0.1:${controllerPort}`,
      ...names.map(([n, l]) => `${l}://127.0.0.1:${ports[n]}`),
    ].join(','),
    'advertised.listeners': [`PLAINTEXT://127.0.0.1:${port}`, ...names.map(([n, l]) => `${l}://127.0.0.1:${ports[n]}`)].join(','),
    'listener.security.protocol.map': [
      'PLAINTEXT:PLAINTEXT',
      'CONTROLLER:PLAINTEXT',
      ...names.map(([n, l]) => `${l}:${protocolOf(n)}`),
    ].join(','),
    'ssl.keystore.type': 'PEM',
    'ssl.keystore.location': certs.brokerKeystorePem,
    'ssl.truststore.type': 'PEM',
    'ssl.truststore.location': certs.caPem,
    'listener.name.wronghost.ssl.keystore.location': certs.wrongHostKeystorePem,
    'listener.name.expired.ssl.keystore.location': certs.expiredBrokerKeystorePem,
    'listener.name.mtls.ssl.client.auth': 'required',
    'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER',
    'listener.name.saslplain.sasl.enabled.mechanisms': 'PLAIN',
    'listener.name.saslplain.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required ${users};`,
    'listener.name.scram.sasl.enabled.mechanisms': 'SCRAM-SHA-256,SCRAM-SHA-512',
    'listener.name.scram.scram-sha-256.sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.scram.scram-sha-512.sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    'listener.name.oauth.sasl.enabled.mechanisms': 'OAUTHBEARER',
    'listener.name.oauth.oauthbearer.sasl.jaas.config':
      'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker";',
  };
}

async function waitUntilReady(bootstrapServers: string, timeoutMs: number, gone: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const kafka = new Kafka({
    clientId: 'tributary-broker-probe',
    brokers: [bootstrapServers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1000,
    requestTimeout: 2000,
    retry: { retries: 0 },
  });
  let lastError = 'no answer yet';
  while (Date.now() < deadline) {
    if (gone()) throw new Error('the broker process exited');
    const admin = kafka.admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      if (cluster.brokers.some((b) => b.nodeId === 1)) return;
      lastError = 'the broker is not registered yet';
    } catch (e) {
      lastError = e instanceof Error ? e.message : String(e);
    } finally {
      await admin.disconnect().catch(() => {});
    }
    await sleep(250);
  }
  throw new Error(`no answer within ${timeoutMs} ms (last: ${lastError})`);
}

async function refuseIfAlreadyRunning(pidFile: string, dataDir: string): Promise<void> {
  let pid: number;
  try {
    pid = Number((await readFile(pidFile, 'utf8')).trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0) return;
  let cmdline = '';
  try {
    cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).replaceAll('\0', ' ');
  } catch {
    return; // not running
  }
  if (cmdline.includes('kafka.Kafka') && cmdline.includes(dataDir)) {
    throw new Error(`A Kafka broker (pid ${pid}) is already running on data dir ${dataDir}; stop it first`);
  }
}

async function checkJava(): Promise<string> {
  const java = process.env.JAVA_HOME ? join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
  const result = await run(java, ['-version']);
  if (result.code !== 0) {
    throw new Error(`Java 17+ is needed to run the Kafka broker, but '${java} -version' failed: ${tail(result.output, 3)}`);
  }
  const major = /version "(\d+)/.exec(result.output)?.[1];
  if (major !== undefined && Number(major) < 17) {
    throw new Error(`Kafka ${KAFKA_VERSION} needs Java 17+, found: ${result.output.split('\n')[0]}`);
  }
  return java;
}

function log4jConfig(rootLevel: 'INFO' | 'WARN'): string {
  return [
    'status = warn',
    'appender.out.type = Console',
    'appender.out.name = OUT',
    'appender.out.layout.type = PatternLayout',
    'appender.out.layout.pattern = [%d] %p %m (%c)%n',
    `rootLogger.level = ${rootLevel}`,
    'rootLogger.appenderRef.out.ref = OUT',
    // Per-request and config-dump chatter.
    'logger.state.name = state.change.logger',
    'logger.state.level = WARN',
    'logger.config.name = org.apache.kafka.common.config.AbstractConfig',
    'logger.config.level = WARN',
    'logger.clients.name = org.apache.kafka.clients',
    'logger.clients.level = WARN',
    '',
  ].join('\n');
}

/** A random KRaft cluster id: 16 random bytes, base64url without padding (as Kafka's Uuid). */
function randomClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** A TCP port free on 127.0.0.1 right now (the OS picks it), not one of `avoid`. */
export async function freePort(avoid: number[] = []): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await new Promise<number>((resolvePort, reject) => {
      const server = createServer();
      server.unref();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        const p = typeof address === 'object' && address !== null ? address.port : 0;
        server.close(() => resolvePort(p));
      });
    });
    if (port > 0 && !avoid.includes(port)) return port;
  }
  throw new Error('Could not find a free TCP port on 127.0.0.1');
}

/**
 * A detached `sh` loop that stops the broker JVM (SIGTERM, SIGKILL 30 s later) if this Node
 * process dies without doing so (SIGKILL, a test runner killing its worker), so no broker is
 * left running. It ends by itself, within a second, once either process is gone.
 */
function startWatchdog(javaPid: number): void {
  const script = [
    'P=$1; J=$2',
    'while kill -0 "$P" 2>/dev/null && kill -0 "$J" 2>/dev/null; do sleep 1; done',
    'if kill -0 "$J" 2>/dev/null; then',
    '  kill -TERM "$J"; i=0',
    '  while kill -0 "$J" 2>/dev/null && [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done',
    '  kill -KILL "$J" 2>/dev/null',
    'fi',
  ].join('\n');
  try {
    spawn('sh', ['-c', script, 'tributary-kafka-watchdog', String(process.pid), String(javaPid)], {
      detached: true,
      stdio: 'ignore',
    }).unref();
  } catch {
    // No sh: the exit hook still covers ordinary exits.
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const proc of liveChildren) proc.kill('SIGKILL');
  });
}

async function hasFile(dir: string, name: string): Promise<boolean> {
  try {
    return (await stat(join(dir, name))).isFile() && (await readdir(dir)).length > 1;
  } catch {
    return false;
  }
}

function pomKafkaVersion(): string {
  const version = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(POM, 'utf8'))?.[1];
  if (version === undefined) throw new Error(`No <kafka.version> in ${POM}`);
  return version.trim();
}

function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

// ---------------------------------------------------------------------------------------------
// Command line: `tsx test/kafka/broker.ts start [--port N] [--controller-port N] [--data-dir D]
// [--heap-mb N] [--log-file F]` or `tsx test/kafka/broker.ts fetch`.

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const flags = new Map<string, string>();
  for (let i = 0; i < rest.length; i += 2) {
    const key = rest[i];
    const value = rest[i + 1];
    if (key === undefined || !key.startsWith('--') || value === undefined) {
      throw new Error(`Bad arguments: ${rest.join(' ')}`);
    }
    flags.set(key.slice(2), value);
  }
  const num = (name: string): number | undefined => {
    const v = flags.get(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got '${v}'`);
    return n;
  };

  if (command === 'fetch') {
    process.stdout.write(`${await ensureKafkaJars()}\n`);
    return;
  }
  if (command !== 'start') {
    process.stderr.write(
      'Usage: tsx test/kafka/broker.ts start [--port N] [--controller-port N] [--data-dir DIR] [--heap-mb N] [--log-file FILE]\n' +
        '       tsx test/kafka/broker.ts fetch   (only download the jars; prints their dir)\n',
    );
    process.exitCode = 2;
    return;
  }
  const started = Date.now();
  const opts: StartBrokerOptions = {};
  const port = num('port');
  const controllerPort = num('controller-port');
  const heapMb = num('heap-mb');
  if (port !== undefined) opts.port = port;
  if (controllerPort !== undefined) opts.controllerPort = controllerPort;
  if (heapMb !== undefined) opts.heapMb = heapMb;
  if (flags.has('data-dir')) opts.dataDir = flags.get('data-dir');
  if (flags.has('log-file')) opts.logFile = flags.get('log-file');
  const broker = await startBroker(opts);
  process.stderr.write(
    `Kafka ${KAFKA_VERSION} up in ${Date.now() - started} ms: pid ${broker.pid}, data ${broker.dataDir}, log ${broker.logFile}. Ctrl-C stops it.\n`,
  );
  process.stdout.write(`${broker.bootstrapServers}\n`);
  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`${signal}: stopping the broker...\n`);
    const done = opts.dataDir === undefined ? broker.destroy() : broker.stop();
    done.then(
      () => process.exit(0),
      (e: unknown) => {
        process.stderr.write(`${String(e)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  // Keep running; notice if the broker dies on its own.
  const watch = setInterval(() => {
    if (!broker.running && !stopping) {
      process.stderr.write(`The broker exited on its own; see ${broker.logFile}\n`);
      clearInterval(watch);
      process.exit(1);
    }
  }, 1000);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
