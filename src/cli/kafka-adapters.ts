import { resolve } from 'node:path';
import { ConfigError } from '../api/errors.js';
import type { Logger } from '../api/logger.js';
import { checkKafkaConnection } from '../kafka/connection-check.js';
import { kafkajsSecurityOptions, librdkafkaSecurityConfig } from '../kafka/kafka-client-security.js';
import { KAFKAJS_UNFIXED, Kafka, kafkajsFixes, logLevel } from '../kafka/kafkajs-fixes.js';
import { kafkajsLogCreator } from '../kafka/kafkajs-log.js';
import { type KafkajsLike, KafkajsSender } from '../kafka/kafkajs-sender.js';
import { ThreadedKafkajs } from '../kafka/kafkajs-thread.js';
import { KafkajsTransactionalSender } from '../kafka/kafkajs-transactional-sender.js';
import { LibrdkafkaSender } from '../kafka/librdkafka-sender.js';
import { LibrdkafkaTransactionalSender } from '../kafka/librdkafka-transactional-sender.js';
import { kafkajsClientOptions, resolveProducerConfig } from '../kafka/producer-config.js';
import { type ResolvedKafkaSecurity, resolveKafkaSecurity, securityLayers } from '../kafka/security-config.js';
import { TopicAdmin } from '../kafka/topic-admin.js';
import { TopicCreatingSender } from '../kafka/topic-creating-sender.js';
import { type CertificateValidity, distinctCertificates, warnExpiringCertificates } from '../runtime/certificate-validity.js';
import type { KnownKeys } from '../runtime/config-keys.js';
import { transactionalId, workerExactlyOnce } from '../runtime/exactly-once-settings.js';
import { isTransactionalSender, type OffsetStore, type RecordSender, type TransactionalRecordSender } from '../runtime/ports.js';
import { escapeRegExp } from '../runtime/secret-masking.js';
import { topicCreationSettings } from '../runtime/topic-creation-settings.js';
import type { WorkerOptions } from '../runtime/worker.js';
import { checkWorkerBooleans, workerBoolean } from '../runtime/worker-booleans.js';
import { ConnectorOffsetStore } from '../storage/connector-offset-store.js';
import { FileOffsetStore } from '../storage/file-offset-store.js';
import { KafkaOffsetStore } from '../storage/kafka-offset-store.js';

/** The offsets topic of a worker with `bootstrap.servers` that names neither a topic nor a file. */
export const DEFAULT_OFFSETS_TOPIC = 'connect-offsets';

/** Worker keys the Kafka adapters read (producer settings under `producer.`), for the known-keys registry. */
export const KAFKA_WORKER_KEYS: KnownKeys = {
  keys: [
    'bootstrap.servers',
    'client.id',
    'offset.storage.file.filename',
    'offset.storage.topic',
    'offset.storage.partitions',
    'offset.storage.replication.factor',
    'topic.creation.enable',
    'sender',
    'sender.thread',
    'connector.client.config.override.policy',
    'security.protocol',
  ],
  prefixes: ['producer.', 'admin.', 'sasl.', 'ssl.'],
  unsupported: [],
};

/** The Kafka adapters of a worker, and how to release them. */
export type KafkaAdapters = Pick<
  WorkerOptions,
  'offsetStore' | 'connectorOffsetStore' | 'createSender' | 'prepareTopics' | 'checkClientConfig'
> & {
  /**
   * Connects once, with no retries, with the worker's and the admin client's security
   * settings, and fails with one line saying what is wrong (BROKER_SECURITY: wrong password,
   * untrusted certificate, host-name mismatch, protocol mismatch). A broker that does not answer
   * is left to the clients' own retries. Run it before the worker starts. Each producer is
   * checked the same way when its task starts.
   */
  check(): Promise<void>;
  /** The worker-level security settings (offsets topic, cluster id), resolved. */
  readonly security: ResolvedKafkaSecurity;
  /**
   * The certificates of the key stores of the worker, the admin client and the producers
   * (`ssl.keystore.*`, `admin.ssl.keystore.*`, `producer.ssl.keystore.*`), each once; those that
   * expire within 14 days were warned about (`certificate.expiring`).
   */
  readonly certificates: readonly CertificateValidity[];
  close(): Promise<void>;
};

/**
 * Wires a worker to Kafka: one producer per task (`producer.*` and `producer.override.*`),
 * kafkajs by default or librdkafka with `sender=librdkafka`, KIP-158 topic creation when the connector uses `topic.creation.*`
 * and `topic.creation.enable` is true (the default; `true` or `false`, in any case), heartbeat topics created at connector start, and
 * offsets in `offset.storage.file.filename` when given, else in the compacted
 * `offset.storage.topic` (default `connect-offsets`).
 *
 * Security (docs/security.md): the worker's `security.protocol`, `sasl.*` and `ssl.*` apply to
 * every client; `admin.<key>` overrides them for the admin client, `producer.<key>` and a
 * connector's `producer.override.<key>` for producers.
 */
export function kafkaAdapters(
  config: Readonly<Record<string, string>>,
  logger: Logger,
  options: { readonly now?: () => number } = {},
): KafkaAdapters {
  const now = options.now ?? Date.now;
  const brokers = (config['bootstrap.servers'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (brokers.length === 0) throw new ConfigError('worker config', ['bootstrap.servers is empty: give host:port[,host:port...]']);
  const logCreator = kafkajsLogCreator(logger.child({ component: 'kafkajs' }));
  if (kafkajsFixes.notApplied.length > 0) {
    logger.warn({ event: 'kafkajs.fixes', notApplied: kafkajsFixes.notApplied }, KAFKAJS_UNFIXED);
  }
  // kafkajs#1315 (CONCURRENT_TRANSACTIONS retried and logged as ERROR on each attempt) is one
  // of the retriable conditions kafkajsLogCreator puts at debug; the last retry's failure still
  // fails the transaction, and the task, loudly.
  const transactionalLogCreator = logCreator;
  const clientId = config['client.id'] ?? 'tributary';
  const workerSecurity = resolveKafkaSecurity(securityLayers(config, { kind: 'worker' }), { now });
  const adminSecurity = resolveKafkaSecurity(securityLayers(config, { kind: 'admin' }), { now });
  for (const warning of new Set([...workerSecurity.warnings, ...adminSecurity.warnings])) {
    logger.warn({ event: 'security.config' }, warning);
  }
  // The producers' key store as the worker gives it; a connector's producer.override.* may still
  // complete it (a SASL login), so what does not resolve alone is left to the task's start.
  let producerSecurity: ResolvedKafkaSecurity | undefined;
  try {
    producerSecurity = resolveKafkaSecurity(securityLayers(config, { kind: 'producer' }), { now });
  } catch {
    producerSecurity = undefined;
  }
  const certificates = distinctCertificates(
    [workerSecurity, adminSecurity, producerSecurity].flatMap((s) => s?.tls?.keyStoreCertificates ?? []),
  );
  const certificateKey = (c: CertificateValidity) => JSON.stringify([c.store, c.file, c.position, c.notAfter]);
  const warnedCertificates = new Set(warnExpiringCertificates(logger, certificates, now()).map(certificateKey));
  const kafka = new Kafka({ clientId, brokers, logLevel: logLevel.WARN, logCreator, ...kafkajsSecurityOptions(workerSecurity) });
  const adminKafka = new Kafka({
    clientId,
    brokers,
    logLevel: logLevel.WARN,
    logCreator,
    ...kafkajsSecurityOptions(adminSecurity),
  });
  const admin = new TopicAdmin(adminKafka);
  const int = (key: string): number | undefined => {
    const v = config[key];
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n)) throw new ConfigError('worker config', [`${key}: expected an integer, got "${v}"`]);
    return n;
  };
  const file = config['offset.storage.file.filename'];
  // Before any client connects: a bad boolean (topic.creation.enable=flase) stops the start here.
  checkWorkerBooleans(config);
  // The worker's own producer settings, which every task's producer takes: a mistake in one key
  // (producer.lingr.ms, producer.acks=two) would otherwise let the worker start and fail each
  // task as it starts. Combinations wait for the task, since a connector's producer.override.*
  // can change them; so do the producer's security settings (with the Principal policy each
  // connector may bring its own SASL login). Warnings come at task start too.
  resolveProducerConfig(config, {}, {}, { keysOnly: true });
  const exactlyOnce = workerExactlyOnce(config);
  if (exactlyOnce && file) {
    throw new ConfigError('worker config', [
      'exactly.once.source.support=enabled writes offsets in the same Kafka transaction as the records, so they must be in Kafka: remove offset.storage.file.filename (offsets then go to offset.storage.topic)',
    ]);
  }
  if (exactlyOnce && !kafkajsFixes.applied.includes('filterAbortedMessages')) {
    // Without it kafkajs can read the offsets of aborted transactions as committed (issue 40):
    // a task would resume past data that never reached Kafka, so no warning is enough here.
    throw new ConfigError('worker config', [
      `exactly.once.source.support=enabled needs Tributary's fix of kafkajs's read_committed filter, which is not in force (${kafkajsFixes.notApplied.join('; ')}): use kafkajs 2.2.4 as package.json pins it, and load Tributary before anything else loads kafkajs`,
    ]);
  }
  const offsetsTopic = config['offset.storage.topic'] ?? DEFAULT_OFFSETS_TOPIC;
  const kafkaStore = file
    ? undefined
    : new KafkaOffsetStore({
        kafka,
        admin,
        topic: offsetsTopic,
        partitions: int('offset.storage.partitions'),
        replicationFactor: int('offset.storage.replication.factor'),
        logger: logger.child({ component: 'offsets' }),
      });
  const offsetStore: OffsetStore = kafkaStore ?? new FileOffsetStore(resolve(file as string));
  const topicCreation = workerBoolean(config, 'topic.creation.enable');
  const senderKind = config.sender ?? 'kafkajs';
  if (senderKind !== 'kafkajs' && senderKind !== 'librdkafka') {
    throw new ConfigError('worker config', [`sender: "${senderKind}" is not kafkajs (the default) or librdkafka`]);
  }
  // The kafkajs producer on a thread of its own (src/kafka/kafkajs-thread.ts). librdkafka has
  // its own threads: the key there would do nothing, so it is refused rather than ignored.
  const senderThread = workerBoolean(config, 'sender.thread');
  if (exactlyOnce && senderKind === 'kafkajs' && config['sender.thread'] !== undefined) {
    logger.warn(
      { event: 'sender.thread' },
      'sender.thread does not apply with exactly.once.source.support=enabled: the transactional kafkajs producer runs on the main thread',
    );
  }
  if (senderKind === 'librdkafka' && config['sender.thread'] !== undefined) {
    throw new ConfigError('worker config', [
      'sender.thread applies to the kafkajs sender only (librdkafka runs its own threads): remove it, or set sender=kafkajs',
    ]);
  }
  const senders = new Set<RecordSender>();
  /** Per connector, the topics its last start made sure of, so its tasks' senders do not create them again. */
  const prepared = new Map<string, readonly string[]>();
  return {
    offsetStore,
    // A connector's own offsets.storage.topic: created and read like the worker's, layered over it.
    connectorOffsetStore:
      kafkaStore === undefined
        ? undefined
        : ({ topic }) =>
            new ConnectorOffsetStore({
              own: new KafkaOffsetStore({
                kafka,
                admin,
                topic,
                partitions: int('offset.storage.partitions'),
                replicationFactor: int('offset.storage.replication.factor'),
                logger: logger.child({ component: 'offsets', topic }),
              }),
              global: kafkaStore,
            }),
    security: workerSecurity,
    certificates,
    async check() {
      // A broker that is away is left to the clients' own retries, as before; security fails here.
      await checkKafkaConnection(brokers, workerSecurity, 'worker', { onlySecurity: true, now });
      if (JSON.stringify(adminSecurity) !== JSON.stringify(workerSecurity)) {
        await checkKafkaConnection(brokers, adminSecurity, 'admin client (admin.*)', { onlySecurity: true, now });
      }
    },
    checkClientConfig(connectorConfig) {
      // What createSender resolves, without a task: the connector's producer.override.* over the
      // worker's producer.* (whose own mistakes stopped the worker's start).
      return [
        ...configProblems(() => resolveProducerConfig(config, connectorConfig)),
        ...configProblems(() => resolveKafkaSecurity(securityLayers(config, { kind: 'producer', connectorConfig }), { now })),
      ].map((message) => ({ key: problemKey(message, connectorConfig), message }));
    },
    async createSender({ connector, taskId, connectorConfig, exactlyOnce: transactional, offsetStore: taskStore }) {
      // The offsets of a connector with its own offsets.storage.topic go there, in its transactions.
      const offsetRecords = taskStore instanceof ConnectorOffsetStore ? taskStore : kafkaStore;
      const producer = resolveProducerConfig(config, connectorConfig, { connector, task: taskId });
      for (const warning of producer.warnings) logger.warn({ connector, task: taskId, event: 'producer.config' }, warning);
      const security = resolveKafkaSecurity(securityLayers(config, { kind: 'producer', connectorConfig }), { now });
      for (const warning of security.warnings) logger.warn({ connector, task: taskId, event: 'security.config' }, warning);
      // A connector's own key store (producer.override.ssl.keystore.*), warned about once.
      const unwarned = (security.tls?.keyStoreCertificates ?? []).filter((c) => !warnedCertificates.has(certificateKey(c)));
      for (const c of warnExpiringCertificates(logger.child({ connector, task: taskId }), unwarned, now())) {
        warnedCertificates.add(certificateKey(c));
      }
      await checkKafkaConnection(brokers, security, `producer of connector '${connector}' task ${taskId}`, {
        onlySecurity: true,
        now,
      });
      let sender: RecordSender;
      if (transactional && topicCreation && topicCreationSettings(connectorConfig) !== null) {
        // Records wait in the topic-creating sender until their topic exists; a transaction
        // committed meanwhile would carry their offsets without them.
        throw new ConfigError(`config of connector '${connector}'`, [
          'topic.creation.* is not applied with exactly.once.source.support=enabled yet: create the topics beforehand and remove the topic.creation.* keys (or set topic.creation.enable=false on the worker)',
        ]);
      }
      if (transactional && kafkaStore !== undefined && senderKind === 'kafkajs') {
        const id = transactionalId(config, offsetsTopic, connector, taskId);
        const client = new Kafka({
          brokers,
          logLevel: logLevel.WARN,
          logCreator: transactionalLogCreator,
          ...kafkajsClientOptions(producer),
          ...kafkajsSecurityOptions(security),
        });
        const txSender = new KafkajsTransactionalSender({
          kafka: client,
          transactionalId: id,
          offsetsTopic,
          offsetMessages: (name, entries) => (offsetRecords ?? kafkaStore).offsetMessages(name, entries),
          transactionTimeoutMs: int('producer.transaction.timeout.ms'),
        });
        // Fences the task's earlier producers before the task reads its offsets.
        await txSender.connect();
        logger.info(
          { connector, task: taskId, event: 'producer.transactional', transactionalId: id },
          'transactional producer ready',
        );
        sender = txSender;
      } else if (transactional && kafkaStore !== undefined) {
        const id = transactionalId(config, offsetsTopic, connector, taskId);
        // initTransactions at connect fences the task's earlier producers before it reads offsets.
        sender = await LibrdkafkaTransactionalSender.connect(brokers.join(','), producer, librdkafkaSecurityConfig(security), {
          transactionalId: id,
          offsetsTopic,
          offsetMessages: (name, entries) => (offsetRecords ?? kafkaStore).offsetMessages(name, entries),
          transactionTimeoutMs: int('producer.transaction.timeout.ms'),
        });
        logger.info(
          { connector, task: taskId, event: 'producer.transactional', transactionalId: id },
          'transactional producer ready',
        );
      } else if (senderKind === 'librdkafka') {
        sender = await LibrdkafkaSender.connect(brokers.join(','), producer, undefined, librdkafkaSecurityConfig(security));
      } else {
        const client: KafkajsLike = senderThread
          ? new ThreadedKafkajs({
              client: { brokers, logLevel: logLevel.WARN, ...kafkajsClientOptions(producer) },
              security,
              logCreator,
              onRejection: (err) =>
                logger.warn(
                  { connector, task: taskId, event: 'kafkajs.unhandled', err },
                  'kafkajs rejection no one handled; ignored',
                ),
            })
          : new Kafka({
              brokers,
              logLevel: logLevel.WARN,
              logCreator,
              ...kafkajsClientOptions(producer),
              ...kafkajsSecurityOptions(security),
            });
        const kafkajs = new KafkajsSender({
          kafka: client,
          config: producer,
          onAsyncError: (err) => logger.warn({ connector, task: taskId, err }, 'producer error outside any record'),
          onEvent: (event) => {
            if (event.type === 'producer-replaced') {
              logger.warn(
                { connector, task: taskId, event: 'producer.replaced', attempts: event.attempts },
                'replaced the Kafka producer (new producer id) after giving up on a batch that may have been written',
              );
            }
          },
        });
        await kafkajs.connect();
        if (senderThread) {
          logger.info(
            { connector, task: taskId, event: 'producer.thread' },
            'kafkajs producer running on a thread of its own (sender.thread)',
          );
        }
        sender = kafkajs;
      }
      if (isTransactionalSender(sender)) {
        // Topic creation runs per send, which a transaction must not wait on: the topics of an
        // exactly-once connector must exist (or be created by the broker) beforehand.
        const tx = sender;
        senders.add(tx);
        const wrappedTx: TransactionalRecordSender = {
          transactional: true as const,
          send: (r, cb) => tx.send(r, cb),
          flush: () => tx.flush(),
          commitTransaction: (name, entries) => tx.commitTransaction(name, entries),
          abortTransaction: () => tx.abortTransaction(),
          close: async () => {
            senders.delete(tx);
            await tx.close();
          },
        };
        return wrappedTx;
      }
      const settings = topicCreation ? topicCreationSettings(connectorConfig) : null;
      const wrapped: RecordSender = settings
        ? new TopicCreatingSender(sender, admin, settings, prepared.get(connector) ?? [])
        : sender;
      senders.add(wrapped);
      return {
        send: (r, cb) => wrapped.send(r, cb),
        flush: () => wrapped.flush(),
        onStall: (listener) => wrapped.onStall?.(listener),
        close: async () => {
          senders.delete(wrapped);
          await wrapped.close();
        },
      };
    },
    async prepareTopics({ connector, heartbeatTopic, connectorConfig }) {
      prepared.delete(connector);
      if (Number(connectorConfig['heartbeat.interval.ms'] ?? 0) <= 0) return;
      // Created once, here, with the settings that apply to it: the connector's topic.creation
      // group that matches it when topic creation is on, else the broker's defaults.
      const settings = topicCreation ? topicCreationSettings(connectorConfig) : null;
      const s = settings?.settingsFor(heartbeatTopic);
      await admin.ensureTopics(
        [heartbeatTopic],
        s ? { partitions: s.partitions, replicationFactor: s.replicationFactor, configs: s.configs } : {},
      );
      prepared.set(connector, [heartbeatTopic]);
    },
    async close() {
      await Promise.all([...senders].map((s) => s.close().catch(() => {})));
      await admin.close();
    },
  };
}

/** The problems of the ConfigError `check` throws, or none; any other error is thrown on. */
function configProblems(check: () => unknown): readonly string[] {
  try {
    check();
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
}

/**
 * The connector key a producer problem is about: the key it starts with when the connector
 * gives it, else the first `producer.override.*` key it names (a rule between two settings,
 * `retry.backoff.max.ms: ... must be ≥ retry.backoff.ms`, names both), else `''`.
 */
function problemKey(message: string, connectorConfig: Readonly<Record<string, string>>): string {
  const first = /^([^\s:=]+)[:=]/.exec(message)?.[1];
  if (first !== undefined && Object.hasOwn(connectorConfig, first)) return first;
  const overrides = Object.keys(connectorConfig).filter((k) => k.startsWith('producer.override.'));
  const named = (name: string) => new RegExp(`(^|[^\\w.])${escapeRegExp(name)}($|[^\\w.])`).test(message);
  return overrides.find((k) => named(k)) ?? overrides.find((k) => named(k.slice('producer.override.'.length))) ?? '';
}
