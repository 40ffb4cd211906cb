import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import pino from 'pino';
import { ConfigError, isTributaryError, TributaryError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import { JsonLinesSender } from '../embedded/json-lines-sender.js';
import { installKafkajsRejectionGuard } from '../kafka/install-kafkajs-rejection-guard.js';
import { type KafkajsSecurityOptions, kafkajsSecurityOptions } from '../kafka/kafka-client-security.js';
import { Kafka, logLevel } from '../kafka/kafkajs-fixes.js';
import { MetricsHistory } from '../metrics/metrics-history.js';
import { METRICS_TLS_PREFIXES } from '../metrics/metrics-listener.js';
import { MetricsServer } from '../metrics/metrics-server.js';
import { resolveMetricsSettings, WorkerMetrics } from '../metrics/worker-metrics.js';
import { HTTPS_PREFIX, listenerTlsPrefix, resolveRestOptions } from '../rest/rest-options.js';
import { RestServer } from '../rest/rest-server.js';
import { distinctCertificates, warnExpiringCertificates } from '../runtime/certificate-validity.js';
import { KAFKA_CONNECT_WORKER_KEYS } from '../runtime/config-keys.js';
import { resolveWorkerConfig } from '../runtime/config-providers.js';
import { workerExactlyOnce } from '../runtime/exactly-once-settings.js';
import { LoggerLevels, parseLogLevel } from '../runtime/logger-levels.js';
import type { OffsetStore, RecordSender } from '../runtime/ports.js';
import { maskUrlPasswords } from '../runtime/secret-masking.js';
import { checkWorkerTaskSettings } from '../runtime/task-settings.js';
import { Worker, type WorkerOptions } from '../runtime/worker.js';
import { FileOffsetStore } from '../storage/file-offset-store.js';
import { readConnectorFile, readWorkerConfig } from './config-files.js';
import { KAFKA_WORKER_KEYS, kafkaAdapters } from './kafka-adapters.js';
import { createCliLogger, resolveLogSettings } from './log-output.js';
import { installProcessGuards } from './process-guards.js';
import { checkWorkerKeys } from './worker-keys.js';

/** The offsets file of a standalone worker that names none. */
export const DEFAULT_OFFSETS_FILE = '.tributary/offsets.json';

/** Options of {@link runStandalone}. */
export interface StandaloneOptions {
  readonly workerConfigPath: string;
  /** Connector files to create at start; none starts an empty worker (connectors then come over REST). */
  readonly connectorConfigPaths: readonly string[];
  /** Where logs go; default: pino on stderr, as `log.level` and `log.format` say. */
  readonly logger?: Logger;
  /** Where embedded records go when `embedded.output` is `stdout` (the default). */
  readonly stdout?: NodeJS.WritableStream;
  /**
   * Stops the start-up: once aborted, no further step is taken (the REST API, the next
   * connector), the connection check to Kafka is no longer waited for, and the worker is stopped
   * gracefully (final offset flush) before `runStandalone` resolves with it. A step that fails is
   * still the start-up's failure (it rejects). For SIGTERM or SIGINT during start-up.
   */
  readonly signal?: AbortSignal;
  /**
   * Installs {@link installProcessGuards} for the worker's life, so that an error escaping one
   * connector's code is logged instead of ending the process. Default false: only a process
   * that is nothing but this worker (the `tributary` command) should.
   */
  readonly processGuards?: boolean;
}

/** A standalone worker, with its REST API when `listeners` is not set empty. */
export type StandaloneWorker = Worker & {
  /** The REST API (stopped by `worker.stop()`), or undefined when `listeners=` is empty. */
  readonly rest: RestServer | undefined;
  /** The worker's metrics (`GET /metrics`). */
  readonly metrics: WorkerMetrics;
  /** The worker's named loggers and their levels (`/admin/loggers`). */
  readonly loggerLevels: LoggerLevels;
  /** The listener of its own `GET /metrics` has with `metrics.listeners`, else undefined. */
  readonly metricsServer: MetricsServer | undefined;
};

/**
 * Runs a standalone worker: reads the worker config and the connector configs, wires the
 * adapters (Kafka when `bootstrap.servers` is set, else the embedded JSON-lines sink), starts
 * the REST API (`listeners`, default http://127.0.0.1:8083; `listeners=` empty turns it off),
 * starts every connector and resolves with the worker. Stop it with `worker.stop()`, which
 * also closes the REST API, and rejects with `OFFSET_FLUSH_FAILED` when a final offset flush
 * failed. The offsets file (with or without Kafka) is locked and checked for writing at start.
 */
export async function runStandalone(options: StandaloneOptions): Promise<StandaloneWorker> {
  // `${provider:path:key}` in the worker config resolve through the providers it defines.
  const where = `worker config ${options.workerConfigPath}`;
  const raw = await readWorkerConfig(options.workerConfigPath);
  const keyWarnings = checkWorkerKeys(raw, options.workerConfigPath);
  const { config, providers } = await inFile(where, async () => resolveWorkerConfig(raw));
  // A bad task setting only the worker gives is the worker config's fault, found before anything
  // starts; one a connector can override is a warning, which Worker.start() logs.
  await inFile(where, async () => checkWorkerTaskSettings(config));
  const logSettings = resolveLogSettings(config, where, { env: process.env, isTTY: process.stderr.isTTY === true });
  const restOptions = await inFile(where, () => resolveRestOptions(config));
  const metricsSettings = await inFile(where, async () => resolveMetricsSettings(config));
  const metrics = new WorkerMetrics({
    partitionLimit: metricsSettings.partitionLimit,
    staleThresholdMs: metricsSettings.staleThresholdMs,
  });
  // A logger given without log.level gets everything, as before; /admin/loggers changes this level.
  const levelGiven = config['log.level'] ?? process.env.TRIBUTARY_LOG_LEVEL;
  const loggerLevels = new LoggerLevels(
    parseLogLevel(options.logger && levelGiven === undefined ? 'trace' : logSettings.level) ?? 'INFO',
  );
  // sonic-boom, as pino's own destination: synchronous, and it retries a pipe that is full (EAGAIN).
  const stderr = options.logger ? undefined : pino.destination({ fd: 2, sync: true });
  // pino writes everything it is given; the levels of /admin/loggers decide what it is given.
  const logger = loggerLevels.wrap(options.logger ?? createCliLogger(logSettings, (line) => stderr?.write(line), 'trace'));
  for (const warning of keyWarnings) logger.warn({ event: 'config.unknown.key' }, warning);
  const connectors = await Promise.all(options.connectorConfigPaths.map((p) => readConnectorFile(p)));
  const kafka = config['bootstrap.servers'] ? await inFile(where, async () => kafkaAdapters(config, logger)) : undefined;
  // Key stores within 14 days of their notAfter: a WARN now (the Kafka clients' were warned about
  // as they were resolved), their seconds left in /metrics, and a note in /health.
  // The REST and metrics listeners' stores (the metrics listener may use the REST one's).
  const listenerCertificates = distinctCertificates([
    ...(restOptions?.tls?.certificates ?? []),
    ...(metricsSettings.listener?.tls?.certificates ?? []),
  ]);
  warnExpiringCertificates(logger, listenerCertificates, Date.now());
  metrics.watchCertificates([...(kafka?.certificates ?? []), ...listenerCertificates]);
  if (!kafka) {
    const ignored = embeddedIgnoredKeys(config);
    if (ignored.length > 0) {
      logger.warn(
        { event: 'config.ignored', keys: ignored },
        `no bootstrap.servers, so records go to the embedded JSON-lines output and offsets to ${config['offset.storage.file.filename'] ?? DEFAULT_OFFSETS_FILE}: these Kafka settings of ${options.workerConfigPath} are ignored: ${ignored.join(', ')}. Set bootstrap.servers to write to Kafka`,
      );
    }
  }
  const uninstallProcessGuards = options.processGuards ? installProcessGuards(logger) : () => {};
  const uninstallGuard = kafka
    ? installKafkajsRejectionGuard((err) =>
        logger.warn({ event: 'kafkajs.unhandled', err }, 'kafkajs rejection no one handled; ignored'),
      )
    : () => {};
  let rest: RestServer | undefined;
  let metricsServer: MetricsServer | undefined;
  // Its config errors name the file, as the Kafka adapters' do.
  const adapters = kafka ?? (await inFile(where, async () => embeddedAdapters(config, options, where)));
  const worker = new Worker({
    config,
    logger,
    configProviders: providers,
    ...adapters,
    taskListener: metrics.taskListener,
    taskFreshness: metrics.taskFreshness,
    close: async () => {
      await rest?.close();
      await metricsServer?.close();
      history.stop();
      await kafka?.close();
      uninstallGuard();
      uninstallProcessGuards();
    },
  });
  metrics.attach(worker);
  const history = new MetricsHistory(metrics, { intervalMs: metricsSettings.historyIntervalMs });
  const aborted = () => options.signal?.aborted === true;
  let started = false;
  try {
    if (kafka) await checkUnlessAborted(kafka.check(), options.signal);
    if (!aborted()) await worker.start();
    history.start();
    if (metricsSettings.listener && !aborted()) {
      metricsServer = await MetricsServer.start(metrics, metricsSettings.listener, { logger });
    }
    if (restOptions && !aborted()) {
      rest = await RestServer.start(worker, restOptions, {
        logger,
        clusterId: kafka ? kafkaClusterId(config['bootstrap.servers'] ?? '', kafkajsSecurityOptions(kafka.security)) : undefined,
        metrics,
        serveMetrics: metricsSettings.listeners === '',
        loggerLevels,
        history,
        ready: () => started,
      });
    }
    for (const c of connectors) {
      if (aborted()) break;
      try {
        await worker.createConnector(c.name, c.config, {
          initialState: c.initialState,
          offsets: c.offsets,
          offsetsFromFile: c.file,
        });
      } catch (e) {
        // Name the file: the worker only knows the connector's name.
        if (e instanceof ConfigError) throw new ConfigError(`connector config ${c.file} (connector '${c.name}')`, e.problems);
        if (isTributaryError(e) && e.code === 'OFFSET_DECODE') {
          throw new TributaryError('OFFSET_DECODE', `${e.message} (offsets of connector config ${c.file})`, { cause: e });
        }
        throw e;
      }
    }
    if (connectors.length === 0) {
      logger.info(
        { event: 'worker.empty' },
        rest
          ? `no connector files given: the worker runs no connector until one is created with POST ${rest.url}/connectors`
          : 'no connector files given and the REST API is off (listeners=): the worker has nothing to run',
      );
    }
    started = true;
  } catch (e) {
    // The start failure is what the user must see; a stop failure on top of it is logged. Also
    // when a stop was asked for meanwhile: nothing stops the worker under a running step (the
    // signal only aborts between steps), so the failure is the start-up's own (exit 1).
    await worker
      .stop()
      .catch((stopError: unknown) => logger.error({ event: 'worker.stop.failed', err: stopError }, describeFailure(stopError)));
    throw e;
  }
  if (aborted()) {
    logger.info({ event: 'worker.startup.aborted' }, 'stop requested during start-up; stopping gracefully');
    await worker.stop();
  }
  return Object.assign(worker, { rest, metrics, metricsServer, loggerLevels });
}

/**
 * Waits for the connection check to Kafka, or only until `signal` is aborted: against an
 * unreachable Kafka the check takes seconds to fail, and what it finds after a stop was asked for
 * is no one's to see (its rejection is handled). A check that fails first rejects.
 */
export async function checkUnlessAborted(check: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  check.catch(() => {});
  if (signal === undefined) return check;
  if (signal.aborted) return;
  let onAbort = (): void => {};
  const aborted = new Promise<void>((resolve) => {
    onAbort = () => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([check, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Runs `read`; a config error it raises names the file (`worker config w.properties: ...`). */
export async function inFile<T>(where: string, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (e) {
    if (e instanceof ConfigError && !e.message.includes(where)) {
      const what = e.message.replace(/^Invalid (.*?): .*$/s, '$1');
      throw new ConfigError(`${where} (${what})`, e.problems);
    }
    throw e;
  }
}

/** The Kafka cluster id for `GET /`, asked once it is first wanted and kept; null while the cluster cannot be reached. */
function kafkaClusterId(bootstrapServers: string, security: KafkajsSecurityOptions): () => Promise<string | null> {
  let known: string | undefined;
  return async () => {
    if (known !== undefined) return known;
    const brokers = bootstrapServers
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const admin = new Kafka({
      clientId: 'tributary-rest',
      brokers,
      logLevel: logLevel.NOTHING,
      retry: { retries: 1 },
      ...security,
    }).admin();
    try {
      await admin.connect();
      known = (await admin.describeCluster()).clusterId;
      return known;
    } catch {
      return null;
    } finally {
      await admin.disconnect().catch(() => {});
    }
  };
}

/**
 * The worker's Kafka settings, which the embedded default does not use: a user who left
 * `bootstrap.servers` out (or set `offset.storage.topic`) must not believe they apply. The
 * worker's `ssl.*` keys serve an https REST or metrics listener too (without their own `...https.ssl.*`).
 */
function embeddedIgnoredKeys(config: Readonly<Record<string, string>>): string[] {
  const https = (key: string) => (config[key] ?? '').trim().toLowerCase().startsWith('https:');
  const httpsUsesWorkerSsl =
    (https('listeners') && listenerTlsPrefix(config, [HTTPS_PREFIX]) === '') ||
    (https('metrics.listeners') && listenerTlsPrefix(config, METRICS_TLS_PREFIXES) === '');
  return Object.keys(config).filter((key) => {
    // Read without Kafka too: a connector's offsets.storage.topic is compared with it, and the
    // connectors' topic.creation.* are checked against it. bootstrap.servers is here only when empty.
    if (key === 'offset.storage.file.filename' || key === 'offset.storage.topic' || key === 'topic.creation.enable') return false;
    // Kafka Connect keys Tributary does not implement (admin.listeners) have a warning of their own.
    if (KAFKA_CONNECT_WORKER_KEYS.unsupported.includes(key)) return false;
    if (key.startsWith('ssl.')) return !httpsUsesWorkerSsl;
    return KAFKA_WORKER_KEYS.keys.includes(key) || KAFKA_WORKER_KEYS.prefixes.some((p) => key.startsWith(p));
  });
}

function embeddedAdapters(
  config: Record<string, string>,
  options: StandaloneOptions,
  where: string,
): Pick<WorkerOptions, 'offsetStore' | 'createSender'> {
  if (workerExactlyOnce(config)) {
    throw new ConfigError(where, [
      'exactly.once.source.support=enabled needs Kafka (records and offsets go in Kafka transactions): set bootstrap.servers, or leave exactly.once.source.support out for the embedded JSON-lines output',
    ]);
  }
  const output = config['embedded.output'] ?? 'stdout';
  if (output !== 'stdout') {
    const found = statSync(resolve(output), { throwIfNoEntry: false });
    if (found && !found.isDirectory()) {
      throw new ConfigError(where, [
        `embedded.output: "${output}" is a file, not a directory; give a directory (one <topic>.jsonl file per topic is written there) or stdout`,
      ]);
    }
  }
  const sink = new JsonLinesSender(
    output === 'stdout'
      ? { stream: (options.stdout ?? process.stdout) as NodeJS.WritableStream & import('node:stream').Writable }
      : { directory: resolve(output) },
  );
  const offsetStore: OffsetStore = new FileOffsetStore(resolve(config['offset.storage.file.filename'] ?? DEFAULT_OFFSETS_FILE));
  // One sink for every task; a task's close() must not close it for the others.
  const shared: RecordSender = { send: (r, cb) => sink.send(r, cb), flush: () => sink.flush(), close: async () => {} };
  return { offsetStore, createSender: async () => shared };
}

/**
 * Prints an error for a person: the message of a Tributary error, the stack of anything else.
 * A message may quote a config value, so URL passwords in it are shown as `[hidden]`.
 */
export function describeFailure(e: unknown): string {
  if (isTributaryError(e)) return maskUrlPasswords(`${e.code}: ${e.message}`);
  return maskUrlPasswords(e instanceof Error ? (e.stack ?? e.message) : String(e));
}
