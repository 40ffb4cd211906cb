import { ConfigError } from '../api/errors.js';
import { probableKey } from '../runtime/config-keys.js';
import { isSecurityKey, SECURITY_CONFIG_KEYS } from './security-config.js';

/**
 * Producer settings of one task, resolved once from the worker's `producer.*` keys and the
 * connector's `producer.override.*` keys (the override wins), every field required so the send
 * path never meets `undefined`. Names follow Kafka Connect / the Java producer; the key each field
 * comes from is given in brackets.
 */
export interface ResolvedProducerConfig {
  /** [`acks`] `-1` = all in-sync replicas (`all`), `1` = leader only, `0` = no acknowledgement. */
  readonly acks: -1 | 0 | 1;
  /** [`enable.idempotence`] The broker de-duplicates retried batches (kafkajs `idempotent`). */
  readonly idempotent: boolean;
  /** [`max.in.flight.requests.per.connection`] `sendBatch` calls outstanding at once. */
  readonly maxInFlight: number;
  /** [`linger.ms`] How long, in ms, a batch waits for more records before it is sent. */
  readonly lingerMs: number;
  /** [`batch.size`] Bytes (key + value + header bytes) at which a batch is sent at once. One batch is one Produce request covering every topic-partition in it. */
  readonly batchSizeBytes: number;
  /** [`batch.max.records`, Tributary-specific] Records at which a batch is sent at once. */
  readonly batchMaxRecords: number;
  /** [`compression.type`] Codec of each record batch; kafkajs has only gzip built in. */
  readonly compression: 'none' | 'gzip';
  /** [`request.timeout.ms`] Ms the broker may wait for replicas before answering a Produce request (kafkajs `sendBatch({timeout})`); also the client-side request timeout given by {@link kafkajsClientOptions}. */
  readonly requestTimeoutMs: number;
  /**
   * [`delivery.timeout.ms`] Upper bound, in ms from `send()`, on reporting a record's success or
   * failure; retries stop after it. `Infinity` (the default, when the key is not set): transient
   * failures are retried in order until Kafka answers, however long the outage.
   */
  readonly deliveryTimeoutMs: number;
  /** [`retries`] How many times a batch may be re-sent; `Number.MAX_SAFE_INTEGER` = until `delivery.timeout.ms`. */
  readonly retries: number;
  /** [`retry.backoff.ms`] First wait, in ms, before re-sending a failed batch; doubles each time. */
  readonly retryBackoffMs: number;
  /** [`retry.backoff.max.ms`] Longest wait, in ms, between re-sends. */
  readonly retryBackoffMaxMs: number;
  /** [`metadata.max.age.ms`] Ms after which topic metadata is refreshed even without errors. */
  readonly metadataMaxAgeMs: number;
  /** [`client.id`] Client id in the broker's request logs and quotas (a kafkajs `Kafka` setting). */
  readonly clientId: string;
  /** One line per key that was given but ignored (a Kafka producer setting kafkajs lacks, or a key that is no Kafka producer setting and no near miss of one), or per setting adjusted for consistency. */
  readonly warnings: readonly string[];
}

/** Who the producer belongs to; used for the default `client.id`, as Kafka Connect does. */
export interface ProducerContext {
  /** Connector name; defaults to the connector config's `name`. */
  readonly connector?: string | undefined;
  /** Task number. */
  readonly task?: number | undefined;
}

/**
 * The defaults, with the reason for each where it differs from the Java producer.
 *
 * - `enable.idempotence=true` with `max.in.flight.requests.per.connection=1`: kafkajs does not
 *   reassign sequence numbers when one of several concurrent batches fails
 *   (tulios/kafkajs#1005 is open: concurrent idempotent sends can be silently dropped; #980),
 *   and it serialises idempotent Produce requests per broker anyway, so more than one in flight
 *   gains nothing and risks loss. Without idempotence, kafkajs does not keep concurrent
 *   `sendBatch` calls in order either (each awaits metadata and encoding steps before writing its
 *   request): measured here with 3 in flight, 200 000 records in about 200 batches needed 100
 *   re-sends of overtaken batches to keep acknowledged records in order, writing 2.5 times as
 *   many records, at 60% of the one-in-flight rate.
 *   Kafka Connect itself runs source producers with one in flight. Idempotence makes the
 *   sender's own re-sends duplicate-free.
 * - `batch.size=524288` (512 KiB) per request rather than Java's 16 KiB per partition: kafkajs
 *   has no accumulator, so one batch is one request and request count decides throughput.
 *   It stays under the broker's default `message.max.bytes` (1 MiB) even if every record of a
 *   batch lands in one partition.
 * - `batch.max.records=1000`: kafkajs groups a batch's messages per partition by copying the
 *   array once per message (quadratic in the records per partition), so long batches cost CPU.
 *   With 100-byte records on one broker, 1000 per batch gave the best throughput of
 *   500/1000/2000/5000 in bench/kafkajs-sender.ts, both through the sender and for a raw
 *   kafkajs loop.
 * - `linger.ms=5`, `request.timeout.ms=30000`, `retry.backoff.ms=100`,
 *   `retry.backoff.max.ms=1000`, `metadata.max.age.ms=300000`: as Kafka 4's Java producer.
 * - `delivery.timeout.ms` unbounded (Java: 120000): a source task whose broker is away keeps its
 *   records and retries them in order until the broker answers, while the in-flight bound pauses
 *   the source, instead of failing and waiting for a manual restart. Set it to give up after
 *   that long (the task then fails, as in Kafka Connect).
 */
export const PRODUCER_DEFAULTS = {
  acks: -1,
  idempotent: true,
  maxInFlight: 1,
  lingerMs: 5,
  batchSizeBytes: 512 * 1024,
  batchMaxRecords: 1000,
  compression: 'none',
  requestTimeoutMs: 30_000,
  deliveryTimeoutMs: Number.POSITIVE_INFINITY,
  retries: Number.MAX_SAFE_INTEGER,
  retryBackoffMs: 100,
  retryBackoffMaxMs: 1000,
  metadataMaxAgeMs: 300_000,
} as const;

const KNOWN_KEYS = [
  'acks',
  'enable.idempotence',
  'max.in.flight.requests.per.connection',
  'linger.ms',
  'batch.size',
  'batch.max.records',
  'compression.type',
  'request.timeout.ms',
  'delivery.timeout.ms',
  'retries',
  'retry.backoff.ms',
  'retry.backoff.max.ms',
  'metadata.max.age.ms',
  'client.id',
] as const;
type KnownKey = (typeof KNOWN_KEYS)[number];

/**
 * Settings of the Java producer (Kafka 4.x `ProducerConfig`) that the kafkajs producer has no
 * equivalent for: given, they are ignored with a warning. Security settings are not listed here
 * (see {@link isSecurityKey}); neither is `transaction.timeout.ms` (see {@link READ_ELSEWHERE_KEYS}).
 */
const KAFKA_IGNORED_KEYS = [
  'bootstrap.servers',
  'buffer.memory',
  'client.dns.lookup',
  'compression.gzip.level',
  'compression.lz4.level',
  'compression.zstd.level',
  'config.providers',
  'connections.max.idle.ms',
  'enable.metrics.push',
  'interceptor.classes',
  'key.serializer',
  'max.block.ms',
  'max.request.size',
  'metadata.max.idle.ms',
  'metadata.recovery.rebootstrap.trigger.ms',
  'metadata.recovery.strategy',
  'metric.reporters',
  'metrics.num.samples',
  'metrics.recording.level',
  'metrics.sample.window.ms',
  // Removed in Kafka 4.0; still in many 3.x configs.
  'auto.include.jmx.reporter',
  'partitioner.adaptive.partitioning.enable',
  'partitioner.availability.timeout.ms',
  'partitioner.class',
  'partitioner.ignore.keys',
  'receive.buffer.bytes',
  'reconnect.backoff.max.ms',
  'reconnect.backoff.ms',
  'security.providers',
  'send.buffer.bytes',
  'socket.connection.setup.timeout.max.ms',
  'socket.connection.setup.timeout.ms',
  'transaction.two.phase.commit.enable',
  'transactional.id',
  'value.serializer',
] as const;

/**
 * Producer settings that another part of the worker reads from the worker's `producer.<key>`
 * (`transaction.timeout.ms`: the transactional senders, in src/cli/kafka-adapters.ts); as a
 * connector's `producer.override.<key>` they are ignored with a warning.
 */
const READ_ELSEWHERE_KEYS = ['transaction.timeout.ms'] as const;

/** Every producer setting name a given key may be a typo of. */
const TYPO_CANDIDATES = [...KNOWN_KEYS, ...KAFKA_IGNORED_KEYS, ...READ_ELSEWHERE_KEYS, ...SECURITY_CONFIG_KEYS];

const WORKER_PREFIX = 'producer.';
const CONNECTOR_PREFIX = 'producer.override.';
const OVERRIDE_POLICY_KEY = 'connector.client.config.override.policy';
/** What Kafka Connect's `Principal` policy lets a connector override. */
const PRINCIPAL_KEYS = new Set(['sasl.jaas.config', 'sasl.mechanism', 'security.protocol']);

/**
 * Resolves the producer settings of one connector's tasks, once, at task start.
 *
 * Precedence (as Kafka Connect): connector `producer.override.<key>` > worker `producer.<key>` >
 * {@link PRODUCER_DEFAULTS}. The worker's `connector.client.config.override.policy` (`All`,
 * the default; `None`; `Principal`) limits what a connector may override. Java producer
 * settings the kafkajs producer cannot honour (`buffer.memory`, `key.serializer`, ...) are
 * ignored and listed in `warnings`, as are keys that are no Kafka producer setting at all;
 * `security.protocol`, `sasl.*` and `ssl.*` are left to {@link resolveKafkaSecurity}
 * (src/kafka/security-config.ts). A key one or two edits from a producer setting
 * (`producer.override.lingr.ms`) is an error with "did you mean", and so is a
 * `producer.override.*` key in the worker config (a connector setting; the worker's form is
 * `producer.*`). Values that are wrong raise the same {@link ConfigError}, which lists every
 * problem with its key, the value given and what is accepted.
 *
 * As in the Java producer, idempotence that was not asked for explicitly is turned off (with a
 * warning) when `acks` is not `all` or `retries` is 0; asked for explicitly, such a combination
 * is an error. More than one request in flight needs `enable.idempotence=false`: with implicit
 * idempotence it is lowered to 1 (with a warning), with explicit idempotence it is an error.
 * With idempotence off it is honoured, with a warning that kafkajs reorders concurrent requests
 * (the sender then re-sends overtaken batches, writing records twice).
 *
 * @param workerConfig The worker's properties (only `producer.*` and the override policy are read).
 * @param connectorConfig The connector's config (only `producer.override.*` and `name` are read).
 * @param context Connector name and task number for the default `client.id`
 *   (`connector-producer-<connector>-<task>`).
 * @returns The fully resolved settings.
 * @throws ConfigError when a value is malformed, out of range, or the combination is unsafe.
 *
 * @example
 * ```ts
 * const config = resolveProducerConfig(
 *   { 'producer.linger.ms': '10' },
 *   { name: 'pg', 'producer.override.compression.type': 'gzip' },
 *   { task: 0 },
 * );
 * config.lingerMs;    // 10
 * config.compression; // 'gzip'
 * config.clientId;    // 'connector-producer-pg-0'
 * ```
 */
export function resolveProducerConfig(
  workerConfig: Readonly<Record<string, string>>,
  connectorConfig: Readonly<Record<string, string>>,
  context: ProducerContext = {},
  internal: { readonly keysOnly?: boolean } = {},
): ResolvedProducerConfig {
  const problems: string[] = [];
  const warnings: string[] = [];
  /** key -> [value, key as the user wrote it] */
  const given = new Map<KnownKey, [string, string]>();
  const givenPolicy = (workerConfig[OVERRIDE_POLICY_KEY] ?? 'All').trim();
  // Kafka Connect takes the policy's alias, its class's simple name or its full name.
  const policy =
    /^(?:org\.apache\.kafka\.connect\.connector\.policy\.)?(All|None|Principal)(?:ConnectorClientConfigOverridePolicy)?$/.exec(
      givenPolicy,
    )?.[1];
  if (policy === undefined) {
    problems.push(
      `${OVERRIDE_POLICY_KEY}: '${givenPolicy}' is not one of All, None, Principal (or their classes, such as org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy)`,
    );
  }

  collect(workerConfig, WORKER_PREFIX);
  collect(connectorConfig, CONNECTOR_PREFIX);

  function collect(config: Readonly<Record<string, string>>, prefix: string): void {
    const inWorker = prefix === WORKER_PREFIX;
    for (const fullKey of Object.keys(config)) {
      if (!fullKey.startsWith(prefix)) continue;
      const key = fullKey.slice(prefix.length);
      const raw = config[fullKey];
      if (raw === undefined) continue;
      if (inWorker && fullKey.startsWith(CONNECTOR_PREFIX)) {
        // Kafka Connect would pass it to the producer as `override.<key>`, which no producer reads.
        problems.push(
          `${fullKey}: in the worker config, but producer.override.* is a connector setting, not a worker one; ` +
            `put it in the connector config, or use ${WORKER_PREFIX}${fullKey.slice(CONNECTOR_PREFIX.length)} in the worker config`,
        );
        continue;
      }
      if (!inWorker && policy !== 'All' && !(policy === 'Principal' && PRINCIPAL_KEYS.has(key))) {
        problems.push(`${fullKey}: connectors may not override producer settings under ${OVERRIDE_POLICY_KEY}=${givenPolicy}`);
        continue;
      }
      if ((KNOWN_KEYS as readonly string[]).includes(key)) {
        given.set(key as KnownKey, [String(raw).trim(), fullKey]);
      } else if (isSecurityKey(key)) {
        // security.protocol, sasl.*, ssl.*: resolved (and checked) by resolveKafkaSecurity.
      } else if ((READ_ELSEWHERE_KEYS as readonly string[]).includes(key)) {
        if (!inWorker) {
          warnings.push(`${fullKey}: ignored (Tributary reads it only from the worker config, as ${WORKER_PREFIX}${key})`);
        }
      } else if ((KAFKA_IGNORED_KEYS as readonly string[]).includes(key)) {
        warnings.push(`${fullKey}: ignored (not a setting the kafkajs producer supports)`);
      } else {
        // A typo must not switch a setting back to its default quietly (delivery.timout.ms).
        const meant = probableKey(key, { keys: TYPO_CANDIDATES, prefixes: [] });
        const override = inWorker ? probableKey(fullKey, { keys: [], prefixes: [CONNECTOR_PREFIX] }) : undefined;
        if (meant !== undefined && (KAFKA_IGNORED_KEYS as readonly string[]).includes(meant)) {
          // Near a setting kafkajs ignores anyway: nothing goes back to a default unnoticed.
          warnings.push(
            `${fullKey}: ignored (not a Kafka producer setting Tributary knows; ${prefix}${meant}, which it resembles, is ignored too)`,
          );
        } else if (meant !== undefined) {
          problems.push(`${fullKey}: unknown producer setting; did you mean ${prefix}${meant}?`);
        } else if (override !== undefined) {
          problems.push(
            `${fullKey}: unknown producer setting; did you mean ${override}? (a connector setting; ` +
              `in the worker config use ${WORKER_PREFIX}${override.slice(CONNECTOR_PREFIX.length)})`,
          );
        } else {
          warnings.push(`${fullKey}: ignored (not a Kafka producer setting Tributary knows)`);
        }
      }
    }
  }

  const acks = parse(
    'acks',
    PRODUCER_DEFAULTS.acks,
    (v) => {
      const a = v.toLowerCase();
      if (a === 'all' || a === '-1') return -1;
      if (a === '1') return 1;
      if (a === '0') return 0;
      return undefined;
    },
    'one of all, -1, 1, 0',
  );
  let idempotent: boolean = parse('enable.idempotence', PRODUCER_DEFAULTS.idempotent, parseBoolean, 'true or false');
  let maxInFlight = parse('max.in.flight.requests.per.connection', PRODUCER_DEFAULTS.maxInFlight, int(1), 'an integer ≥ 1');
  const lingerMs = parse('linger.ms', PRODUCER_DEFAULTS.lingerMs, int(0), 'an integer ≥ 0 (milliseconds)');
  const batchSizeBytes = parse('batch.size', PRODUCER_DEFAULTS.batchSizeBytes, int(0), 'an integer ≥ 0 (bytes)');
  const batchMaxRecords = parse('batch.max.records', PRODUCER_DEFAULTS.batchMaxRecords, int(1), 'an integer ≥ 1 (records)');
  const compression = parse(
    'compression.type',
    PRODUCER_DEFAULTS.compression as 'none' | 'gzip',
    (v) => {
      const c = v.toLowerCase();
      if (c === 'none' || c === 'gzip') return c;
      if (c === 'snappy' || c === 'lz4' || c === 'zstd') {
        const [, key] = given.get('compression.type') ?? ['', 'compression.type'];
        problems.push(`${key}: '${v}' needs a kafkajs codec plugin that Tributary does not register; use none or gzip`);
        return PRODUCER_DEFAULTS.compression;
      }
      return undefined;
    },
    'one of none, gzip',
  );
  const requestTimeoutMs = parse(
    'request.timeout.ms',
    PRODUCER_DEFAULTS.requestTimeoutMs,
    int(1),
    'an integer ≥ 1 (milliseconds)',
  );
  let deliveryTimeoutMs = parse(
    'delivery.timeout.ms',
    PRODUCER_DEFAULTS.deliveryTimeoutMs,
    int(1),
    'an integer ≥ 1 (milliseconds)',
  );
  const retries = parse('retries', PRODUCER_DEFAULTS.retries, int(0), 'an integer ≥ 0');
  const retryBackoffMs = parse('retry.backoff.ms', PRODUCER_DEFAULTS.retryBackoffMs, int(0), 'an integer ≥ 0 (milliseconds)');
  const retryBackoffMaxMs = parse(
    'retry.backoff.max.ms',
    PRODUCER_DEFAULTS.retryBackoffMaxMs,
    int(1),
    'an integer ≥ 1 (milliseconds)',
  );
  const metadataMaxAgeMs = parse(
    'metadata.max.age.ms',
    PRODUCER_DEFAULTS.metadataMaxAgeMs,
    int(0),
    'an integer ≥ 0 (milliseconds)',
  );
  const clientIdGiven = given.get('client.id');
  if (clientIdGiven !== undefined && clientIdGiven[0] === '') {
    problems.push(`${clientIdGiven[1]}: must not be empty`);
  }
  const connector = context.connector ?? connectorConfig.name;
  const clientId =
    clientIdGiven !== undefined && clientIdGiven[0] !== ''
      ? clientIdGiven[0]
      : connector === undefined
        ? 'tributary-producer'
        : `connector-producer-${connector}${context.task === undefined ? '' : `-${context.task}`}`;

  // Problems of one key each end here; the rest are of combinations, which a connector's
  // overrides can change: the worker's own check at start (keysOnly) reports only these.
  if (internal.keysOnly && problems.length > 0) throw new ConfigError('producer configuration', problems);

  // Idempotence conflicts, as the Java producer handles them: implicit idempotence yields to
  // conflicting explicit acks/retries (with a warning); explicit idempotence makes them an error.
  const idempotenceExplicit = given.has('enable.idempotence');
  if (idempotent) {
    const conflicts: string[] = [];
    if (acks !== -1) conflicts.push(`${keyOf('acks')}=${given.get('acks')?.[0]} (idempotence needs acks=all)`);
    if (retries === 0) conflicts.push(`${keyOf('retries')}=0 (idempotence needs retries ≥ 1)`);
    if (conflicts.length > 0) {
      if (idempotenceExplicit) {
        for (const c of conflicts) problems.push(`${keyOf('enable.idempotence')}=true conflicts with ${c}`);
      } else {
        idempotent = false;
        warnings.push(`enable.idempotence turned off because of ${conflicts.join(', ')}; retried batches may be written twice`);
      }
    }
  }
  // More than one batch in flight: unlike Java's, kafkajs's idempotent producer is not safe with
  // it, and kafkajs does not keep concurrent requests in order at all. A Java-style setting
  // (5, idempotence by default) is therefore lowered to 1 rather than trading idempotence away.
  const inFlightKey = keyOf('max.in.flight.requests.per.connection');
  if (maxInFlight > 1 && idempotent) {
    if (idempotenceExplicit) {
      problems.push(
        `${keyOf('enable.idempotence')}=true conflicts with ${inFlightKey}=${maxInFlight}: the kafkajs idempotent producer ` +
          'is only safe with 1 in flight (tulios/kafkajs#1005); use 1, or set enable.idempotence=false',
      );
    } else {
      warnings.push(
        `${inFlightKey}=${maxInFlight} lowered to 1: the kafkajs idempotent producer is only safe with 1 in flight ` +
          '(tulios/kafkajs#1005); set enable.idempotence=false to have more',
      );
      maxInFlight = 1;
    }
  } else if (maxInFlight > 1) {
    warnings.push(
      `${inFlightKey}=${maxInFlight}: kafkajs does not keep concurrent requests in order, so the sender re-sends ` +
        'every batch that a later one overtook; under load that writes many records twice and is slower than 1 in flight' +
        (acks === 0 ? '; with acks=0 there are no offsets to notice it by, so records may be reordered' : ''),
    );
  }

  // Java's rule: delivery.timeout.ms must leave room for lingering plus one request.
  if (deliveryTimeoutMs < lingerMs + requestTimeoutMs) {
    if (given.has('delivery.timeout.ms')) {
      problems.push(
        `${keyOf('delivery.timeout.ms')}: ${deliveryTimeoutMs} must be ≥ linger.ms + request.timeout.ms (${lingerMs + requestTimeoutMs})`,
      );
    } else {
      deliveryTimeoutMs = lingerMs + requestTimeoutMs;
      warnings.push(`delivery.timeout.ms raised to linger.ms + request.timeout.ms = ${deliveryTimeoutMs}`);
    }
  }
  if (retryBackoffMaxMs < retryBackoffMs) {
    problems.push(`${keyOf('retry.backoff.max.ms')}: ${retryBackoffMaxMs} must be ≥ retry.backoff.ms (${retryBackoffMs})`);
  }

  if (problems.length > 0 && !internal.keysOnly) throw new ConfigError('producer configuration', problems);

  return {
    acks,
    idempotent,
    maxInFlight,
    lingerMs,
    batchSizeBytes,
    batchMaxRecords,
    compression,
    requestTimeoutMs,
    deliveryTimeoutMs,
    retries,
    retryBackoffMs,
    retryBackoffMaxMs,
    metadataMaxAgeMs,
    clientId,
    warnings,
  };

  function keyOf(key: KnownKey): string {
    return given.get(key)?.[1] ?? key;
  }

  function parse<T>(key: KnownKey, fallback: T, read: (v: string) => T | undefined, accepted: string): T {
    const entry = given.get(key);
    if (entry === undefined) return fallback;
    const [value, fullKey] = entry;
    const parsed = read(value);
    if (parsed === undefined) {
      problems.push(`${fullKey}: '${value}' is not ${accepted}`);
      return fallback;
    }
    return parsed;
  }
}

/** The `KafkaConfig` fields {@link kafkajsClientOptions} sets. */
export interface KafkajsClientOptions {
  readonly clientId: string;
  readonly requestTimeout: number;
  readonly retry: {
    readonly retries: number;
    readonly initialRetryTime: number;
    readonly maxRetryTime: number;
    readonly factor: number;
    readonly multiplier: number;
  };
}

/**
 * The settings of a kafkajs `Kafka` instance that belong to the producer in Java terms:
 * `client.id`, the client-side request timeout, and the back-off of reconnecting and metadata
 * requests (`retry.backoff.ms` up to `retry.backoff.max.ms`, 5 tries, so that a `sendBatch`
 * with the broker away returns within seconds and the sender, which knows
 * `delivery.timeout.ms`, decides whether to go on). Spread them into the `KafkaConfig` of the
 * instance the sender's producer is made from.
 *
 * @param config Resolved producer settings.
 * @returns `{ clientId, requestTimeout, retry }` for `new Kafka({...})`.
 *
 * @example
 * ```ts
 * import { Kafka } from 'kafkajs';
 *
 * const config = resolveProducerConfig({}, { name: 'orders' }, { task: 0 });
 * const kafka = new Kafka({ brokers: ['127.0.0.1:9092'], ...kafkajsClientOptions(config) });
 * ```
 */
export function kafkajsClientOptions(config: ResolvedProducerConfig): KafkajsClientOptions {
  return {
    clientId: config.clientId,
    requestTimeout: config.requestTimeoutMs,
    retry: {
      retries: 5,
      initialRetryTime: Math.max(1, config.retryBackoffMs),
      maxRetryTime: config.retryBackoffMaxMs,
      factor: 0.2,
      multiplier: 2,
    },
  };
}

function parseBoolean(v: string): boolean | undefined {
  const b = v.toLowerCase();
  if (b === 'true') return true;
  if (b === 'false') return false;
  return undefined;
}

function int(min: number): (v: string) => number | undefined {
  return (v) => {
    if (!/^-?\d+$/.test(v)) return undefined;
    const n = Number(v);
    return Number.isSafeInteger(n) && n >= min ? n : undefined;
  };
}
