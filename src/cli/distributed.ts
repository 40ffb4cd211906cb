import pino from 'pino';
import { ConfigError, TributaryError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import { installKafkajsRejectionGuard } from '../kafka/install-kafkajs-rejection-guard.js';
import { kafkajsSecurityOptions } from '../kafka/kafka-client-security.js';
import { Kafka } from '../kafka/kafkajs-fixes.js';
import { kafkajsLogCreator } from '../kafka/kafkajs-log.js';
import { KafkajsProducerFencer } from '../kafka/kafkajs-producer-fencer.js';
import { KafkajsWorkerGroup } from '../kafka/kafkajs-worker-group.js';
import { MetricsHistory } from '../metrics/metrics-history.js';
import { MetricsServer } from '../metrics/metrics-server.js';
import { resolveMetricsSettings, WorkerMetrics } from '../metrics/worker-metrics.js';
import { FORWARDED_HEADER, forwardRequest } from '../rest/leader-forwarding.js';
import { resolveRestOptions } from '../rest/rest-options.js';
import { RestServer } from '../rest/rest-server.js';
import { distinctCertificates, warnExpiringCertificates } from '../runtime/certificate-validity.js';
import { resolveWorkerConfig } from '../runtime/config-providers.js';
import { DistributedHerder } from '../runtime/distributed/distributed-herder.js';
import { resolveDistributedSettings } from '../runtime/distributed/distributed-settings.js';
import { MEMBER_PROTOCOL } from '../runtime/distributed/member-protocol.js';
import { transactionalId, workerExactlyOnce } from '../runtime/exactly-once-settings.js';
import { LOG_LEVELS, LoggerLevels, parseLogLevel } from '../runtime/logger-levels.js';
import type { OffsetStore } from '../runtime/ports.js';
import { checkWorkerTaskSettings } from '../runtime/task-settings.js';
import { Worker } from '../runtime/worker.js';
import { KafkaConfigTopicStore } from '../storage/kafka-config-topic-store.js';
import { KafkaStatusTopicStore } from '../storage/kafka-status-topic-store.js';
import { readWorkerConfig } from './config-files.js';
import { kafkaAdapters } from './kafka-adapters.js';
import { createCliLogger, resolveLogSettings } from './log-output.js';
import { installProcessGuards } from './process-guards.js';
import { checkUnlessAborted, inFile } from './standalone.js';
import { checkWorkerKeys } from './worker-keys.js';

/** Options of {@link runDistributed}. */
export interface DistributedOptions {
  readonly workerConfigPath: string;
  /** Where logs go; default: pino on stderr, as `log.level` and `log.format` say. */
  readonly logger?: Logger;
  /** See {@link StandaloneOptions.processGuards}. */
  readonly processGuards?: boolean;
  /**
   * Stops the start-up: once aborted, the worker takes no further start step (the REST API,
   * reading the cluster topics, joining the group), stops waiting for the connection check, and
   * is stopped gracefully (final offset flushes, leaving the group) before `runDistributed`
   * resolves with it. A step already running is finished first, a group join too (see
   * DistributedHerder.start). A step that fails is still the start-up's failure (it rejects). For
   * SIGTERM or SIGINT during start-up.
   */
  readonly signal?: AbortSignal;
}

/** A running distributed worker. */
export interface DistributedWorker {
  readonly herder: DistributedHerder;
  /** Undefined when a stop during start-up came before the REST API listened. */
  readonly rest: RestServer | undefined;
  readonly metrics: WorkerMetrics;
  /** Leaves the group gracefully (its work is held for it for `scheduled.rebalance.max.delay.ms`) and stops. */
  stop(): Promise<void>;
}

/**
 * Runs a distributed worker (`tributary distributed worker.properties`): joins the Kafka group
 * `group.id`, reads the cluster's connectors from `config.storage.topic` and their statuses from
 * `status.storage.topic`, runs what the group leader assigns it, and serves the REST API for
 * every connector of the cluster (writes forwarded to the leader). See docs/distributed.md.
 */
export async function runDistributed(options: DistributedOptions): Promise<DistributedWorker> {
  const where = `worker config ${options.workerConfigPath}`;
  const raw = await readWorkerConfig(options.workerConfigPath);
  const keyWarnings = checkWorkerKeys(raw, options.workerConfigPath, 'distributed');
  const { config, providers } = await inFile(where, async () => resolveWorkerConfig(raw));
  // A bad task setting only the worker gives is the worker config's fault, found before anything
  // starts; one a connector can override is a warning, which Worker.start() logs.
  await inFile(where, async () => checkWorkerTaskSettings(config));
  const settings = resolveDistributedSettings(config, where);
  const logSettings = resolveLogSettings(config, where, { env: process.env, isTTY: process.stderr.isTTY === true });
  const restOptions = await inFile(where, () => resolveRestOptions(config));
  if (restOptions === undefined) {
    throw new ConfigError(where, [
      'listeners is empty: a distributed worker needs its REST API (the other workers forward requests to it); give an address, e.g. http://0.0.0.0:8083',
    ]);
  }
  const metricsSettings = await inFile(where, async () => resolveMetricsSettings(config));
  const metrics = new WorkerMetrics({
    partitionLimit: metricsSettings.partitionLimit,
    staleThresholdMs: metricsSettings.staleThresholdMs,
  });
  const levelGiven = config['log.level'] ?? process.env.TRIBUTARY_LOG_LEVEL;
  const loggerLevels = new LoggerLevels(
    parseLogLevel(options.logger && levelGiven === undefined ? 'trace' : logSettings.level) ?? 'INFO',
  );
  const stderr = options.logger ? undefined : pino.destination({ fd: 2, sync: true });
  const logger = loggerLevels.wrap(options.logger ?? createCliLogger(logSettings, (line) => stderr?.write(line), 'trace'));
  for (const warning of keyWarnings) logger.warn({ event: 'config.unknown.key' }, warning);

  const adapters = await inFile(where, async () => kafkaAdapters(config, logger));
  // Key stores within 14 days of their notAfter: a WARN now (the Kafka clients' were warned about
  // as they were resolved), their seconds left in /metrics, and a note in /health.
  // The REST and metrics listeners' stores (the metrics listener may use the REST one's).
  const listenerCertificates = distinctCertificates([
    ...(restOptions.tls?.certificates ?? []),
    ...(metricsSettings.listener?.tls?.certificates ?? []),
  ]);
  warnExpiringCertificates(logger, listenerCertificates, Date.now());
  metrics.watchCertificates([...adapters.certificates, ...listenerCertificates]);
  const brokers = (config['bootstrap.servers'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const kafka = new Kafka({
    clientId: config['client.id'] ?? `tributary-${settings.groupId}`,
    brokers,
    logCreator: kafkajsLogCreator(logger.child({ component: 'kafkajs' })),
    ...kafkajsSecurityOptions(adapters.security),
  });
  const uninstallProcessGuards = options.processGuards ? installProcessGuards(logger) : () => {};
  const uninstallGuard = installKafkajsRejectionGuard((err) =>
    logger.warn({ event: 'kafkajs.unhandled', err }, 'kafkajs rejection no one handled; ignored'),
  );

  const configStore = new KafkaConfigTopicStore({
    kafka,
    topic: settings.configTopic,
    replicationFactor: settings.configReplicationFactor,
    logger: logger.child({ component: 'config-topic' }),
  });
  const statusStore = new KafkaStatusTopicStore({
    kafka,
    topic: settings.statusTopic,
    partitions: settings.statusPartitions,
    replicationFactor: settings.statusReplicationFactor,
    logger: logger.child({ component: 'status-topic' }),
  });
  const group = new KafkajsWorkerGroup({
    kafka,
    groupId: settings.groupId,
    sessionTimeoutMs: settings.sessionTimeoutMs,
    heartbeatIntervalMs: settings.heartbeatIntervalMs,
    rebalanceTimeoutMs: settings.rebalanceTimeoutMs,
    protocolName: MEMBER_PROTOCOL,
    logger: logger.child({ component: 'group' }),
  });

  let herder: DistributedHerder | undefined;
  // A worker whose membership is not confirmed must not move a committed offset: its tasks may
  // already run elsewhere (a zombie after SIGSTOP). The refusal fails the flush loudly.
  const fenced: OffsetStore = fencedOffsetStore(adapters.offsetStore, () => herder?.assertMember('An offset write'));
  let rest: RestServer | undefined;
  let metricsServer: MetricsServer | undefined;
  const worker = new Worker({
    config,
    logger,
    configProviders: providers,
    ...adapters,
    offsetStore: fenced,
    // A connector's own offsets topic (KIP-618) is fenced as the worker's is.
    ...(adapters.connectorOffsetStore
      ? {
          connectorOffsetStore: (context: { connector: string; topic: string }) =>
            fencedOffsetStore(adapters.connectorOffsetStore?.(context) as OffsetStore, () =>
              herder?.assertMember('An offset write'),
            ),
        }
      : {}),
    taskListener: metrics.taskListener,
    taskFreshness: metrics.taskFreshness,
    close: async () => {
      await rest?.close();
      await metricsServer?.close();
      history.stop();
      await adapters.close();
      uninstallGuard();
      uninstallProcessGuards();
    },
  });
  metrics.attach(worker);
  const history = new MetricsHistory(metrics, { intervalMs: metricsSettings.historyIntervalMs });
  const basic = restOptions.basicAuth;
  const authorization = basic ? `Basic ${Buffer.from(`${basic.user}:${basic.password}`).toString('base64')}` : undefined;
  herder = new DistributedHerder({
    worker,
    configStore,
    statusStore,
    group,
    identity: () => ({ workerId: worker.workerId, url: `${restOptions.advertisedListener}://${worker.workerId}` }),
    maxDelayMs: settings.maxDelayMs,
    sessionTimeoutMs: settings.sessionTimeoutMs,
    leaderWaitMs: settings.leaderWaitMs,
    logger,
    onLoggerLevel: (namespace, level) => {
      const parsed = parseLogLevel(level);
      if (parsed === undefined) {
        logger.warn(
          { event: 'logger.level.cluster.invalid', namespace, level },
          `ignored the cluster-wide level '${level}' of logger ${namespace} in the config topic: accepted are ${LOG_LEVELS.join(', ')}`,
        );
        return;
      }
      loggerLevels.set(namespace, parsed);
      logger.info(
        { event: 'logger.level.cluster', namespace, level: parsed },
        `logger ${namespace} set to ${parsed} for the cluster`,
      );
    },
    // KIP-618: the leader fences a connector's earlier task producers before new task configs start.
    ...(workerExactlyOnce(config)
      ? {
          exactlyOnce: {
            fencer: new KafkajsProducerFencer({ kafka }),
            transactionalId: (connector: string, task: number) =>
              transactionalId(config, config['offset.storage.topic'] ?? 'connect-offsets', connector, task),
          },
        }
      : {}),
    restartRemoteTask: async (url, connector, task, hops) => {
      const answer = await forwardRequest(
        url,
        {
          method: 'POST',
          path: `/connectors/${encodeURIComponent(connector)}/tasks/${task}/restart`,
          headers: { [FORWARDED_HEADER]: String(hops), ...(authorization ? { authorization } : {}) },
          body: undefined,
        },
        restOptions.tls,
        restOptions.requestTimeoutMs,
      );
      const error = remoteTaskRestartError(url, connector, task, answer);
      if (error !== undefined) throw error;
    },
  });
  const cluster = {
    herder,
    locator: herder,
    leaderWaitMs: settings.leaderWaitMs,
    setLoggerLevel: (name: string, level: string) => herder.setClusterLoggerLevel(name, level),
  };
  const aborted = () => options.signal?.aborted === true;
  let started = false;
  try {
    await checkUnlessAborted(adapters.check(), options.signal);
    if (!aborted()) {
      rest = await RestServer.start(worker, restOptions, {
        logger,
        metrics,
        serveMetrics: metricsSettings.listeners === '',
        loggerLevels,
        history,
        // Not ready either while a join cannot read the config topic (it is tried again).
        ready: () => started && herder.ready(),
        cluster,
        clusterId: kafkaClusterId(kafka),
      });
    }
    if (metricsSettings.listener && !aborted()) {
      metricsServer = await MetricsServer.start(metrics, metricsSettings.listener, { logger });
    }
    history.start();
    if (!aborted()) await herder.start(options.signal);
    started = !aborted();
  } catch (e) {
    // A failure is the start-up's own, also when a stop was asked for meanwhile: nothing stops
    // the worker under a running step, so it is reported (exit 1), not taken for the stop.
    await herder
      .stop()
      .catch((stopError: unknown) => logger.error({ event: 'worker.stop.failed', err: stopError }, String(stopError)));
    throw e;
  }
  const running = herder;
  if (aborted()) {
    logger.info({ event: 'worker.startup.aborted' }, 'stop requested during start-up; stopping gracefully');
    await running.stop();
  }
  return { herder: running, rest, metrics, stop: () => running.stop() };
}

/** `GET /`'s Kafka cluster id, asked once through the worker's client (null while the broker cannot be reached). */
function kafkaClusterId(kafka: Kafka): () => Promise<string | null> {
  let known: string | undefined;
  return async () => {
    if (known !== undefined) return known;
    const admin = kafka.admin();
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
 * The offset store with every write checked first (`check` throws to refuse it). A proxy, not a
 * copy: the store keeps its class (the exactly-once senders tell a connector's own
 * `ConnectorOffsetStore` by it) and everything but `write` goes to it unchanged.
 */
function fencedOffsetStore<S extends OffsetStore>(store: S, check: () => void): S {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'write') {
        return async (connector: string, entries: Parameters<OffsetStore['write']>[1]) => {
          check();
          await target.write(connector, entries);
        };
      }
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * The error of a task restart that another worker answered with `answer`, undefined when it was
 * done. Its 409 (a rebalance moves the task; the hop limit) stays a 409 to the client, who may
 * retry; any other refusal is TASK_START_FAILED.
 */
export function remoteTaskRestartError(
  url: string,
  connector: string,
  task: number,
  answer: { readonly status: number; readonly body: Buffer },
): TributaryError | undefined {
  if (answer.status < 400) return undefined;
  const message = `The worker at ${url} could not restart task ${task} of ${connector}: ${answer.body.toString()}`;
  return new TributaryError(answer.status === 409 ? 'REBALANCE_IN_PROGRESS' : 'TASK_START_FAILED', message);
}
