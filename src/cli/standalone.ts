import { resolve } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import pino from 'pino';
import { ConfigError, isTributaryError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import { JsonLinesSender } from '../embedded/json-lines-sender.js';
import { installKafkajsRejectionGuard } from '../kafka/install-kafkajs-rejection-guard.js';
import { type KafkajsSecurityOptions, kafkajsSecurityOptions } from '../kafka/kafka-client-security.js';
import { resolveRestOptions } from '../rest/rest-options.js';
import { RestServer } from '../rest/rest-server.js';
import { workerExactlyOnce } from '../runtime/exactly-once-settings.js';
import type { OffsetStore, RecordSender } from '../runtime/ports.js';
import { Worker, type WorkerOptions } from '../runtime/worker.js';
import { FileOffsetStore } from '../storage/file-offset-store.js';
import { readConnectorFile, readWorkerConfig } from './config-files.js';
import { kafkaAdapters } from './kafka-adapters.js';
import { installProcessGuards } from './process-guards.js';

/** The offsets file of a standalone worker that names none. */
export const DEFAULT_OFFSETS_FILE = '.tributary/offsets.json';

/** Options of {@link runStandalone}. */
export interface StandaloneOptions {
  readonly workerConfigPath: string;
  readonly connectorConfigPaths: readonly string[];
  /** Where logs go; default: pino on stderr. */
  readonly logger?: Logger;
  /** Where embedded records go when `embedded.output` is `stdout` (the default). */
  readonly stdout?: NodeJS.WritableStream;
  /**
   * Stops the start-up: once aborted, no further connector is created and the worker is
   * stopped gracefully (final offset flush) before `runStandalone` resolves with it. For
   * SIGTERM or SIGINT during start-up.
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
  const config = await readWorkerConfig(options.workerConfigPath);
  const restOptions = await resolveRestOptions(config);
  const logger =
    options.logger ??
    (pino(
      { level: config['log.level'] ?? process.env.TRIBUTARY_LOG_LEVEL ?? 'info', base: undefined },
      pino.destination({ fd: 2, sync: true }),
    ) as unknown as Logger);
  const connectors = await Promise.all(options.connectorConfigPaths.map((p) => readConnectorFile(p)));
  const kafka = config['bootstrap.servers'] ? kafkaAdapters(config, logger) : undefined;
  const uninstallProcessGuards = options.processGuards ? installProcessGuards(logger) : () => {};
  const uninstallGuard = kafka
    ? installKafkajsRejectionGuard((err) =>
        logger.warn({ event: 'kafkajs.unhandled', err }, 'kafkajs rejection no one handled; ignored'),
      )
    : () => {};
  let rest: RestServer | undefined;
  const worker = new Worker({
    config,
    logger,
    ...(kafka ?? embeddedAdapters(config, options)),
    close: async () => {
      await rest?.close();
      await kafka?.close();
      uninstallGuard();
      uninstallProcessGuards();
    },
  });
  const aborted = () => options.signal?.aborted === true;
  try {
    await kafka?.check();
    await worker.start();
    if (restOptions && !aborted()) {
      rest = await RestServer.start(worker, restOptions, {
        logger,
        clusterId: kafka ? kafkaClusterId(config['bootstrap.servers'] ?? '', kafkajsSecurityOptions(kafka.security)) : undefined,
      });
    }
    for (const c of connectors) {
      if (aborted()) break;
      await worker.createConnector(c.name, c.config, { initialState: c.initialState, offsets: c.offsets });
    }
  } catch (e) {
    // The start failure is what the user must see; a stop failure on top of it is logged.
    await worker
      .stop()
      .catch((stopError: unknown) => logger.error({ event: 'worker.stop.failed', err: stopError }, describeFailure(stopError)));
    // A connector that failed because the worker was stopping under it is no start-up failure.
    if (!aborted()) throw e;
  }
  if (aborted()) {
    logger.info({ event: 'worker.startup.aborted' }, 'stop requested during start-up; stopping gracefully');
    await worker.stop();
  }
  return Object.assign(worker, { rest });
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

function embeddedAdapters(
  config: Record<string, string>,
  options: StandaloneOptions,
): Pick<WorkerOptions, 'offsetStore' | 'createSender'> {
  if (workerExactlyOnce(config)) {
    throw new ConfigError('worker config', [
      'exactly.once.source.support=enabled needs Kafka (records and offsets go in Kafka transactions): set bootstrap.servers, or leave exactly.once.source.support out for the embedded JSON-lines output',
    ]);
  }
  const output = config['embedded.output'] ?? 'stdout';
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

/** Prints an error for a person: the message of a Tributary error, the stack of anything else. */
export function describeFailure(e: unknown): string {
  if (isTributaryError(e)) return `${e.code}: ${e.message}`;
  return e instanceof Error ? (e.stack ?? e.message) : String(e);
}
