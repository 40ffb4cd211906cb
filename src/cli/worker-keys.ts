import { ConfigError } from '../api/errors.js';
import { METRICS_HTTPS_PREFIX } from '../metrics/metrics-listener.js';
import { metricsConfig } from '../metrics/worker-metrics.js';
import { restConfig } from '../rest/rest-options.js';
import { checkKeys, KAFKA_CONNECT_WORKER_KEYS, type KnownKeys, mergeKnownKeys } from '../runtime/config-keys.js';
import { distributedConfig } from '../runtime/distributed/distributed-settings.js';
import { workerExactlyOnceConfig } from '../runtime/exactly-once-settings.js';
import { connectorTaskConfig, workerTaskConfig } from '../runtime/task-settings.js';
import { KAFKA_WORKER_KEYS } from './kafka-adapters.js';

/** Worker keys the standalone command itself reads. */
export const STANDALONE_WORKER_KEYS: KnownKeys = {
  keys: ['embedded.output', 'offset.storage.file.filename', 'log.level', 'log.format', 'plugin.path'],
  prefixes: [],
  unsupported: [],
};

/**
 * Worker keys of the REST API: every key of its config definition (a key added there is known
 * here too) and the per-listener TLS prefix. No `rest.` prefix: a stale `rest.port` must warn.
 */
export const REST_WORKER_KEYS: KnownKeys = {
  keys: Object.keys(restConfig.keys),
  prefixes: ['listeners.https.'],
  unsupported: [],
};

/** Every worker key the standalone worker knows: each module's list, concatenated. */
export function knownWorkerKeys(): KnownKeys {
  return mergeKnownKeys(
    {
      keys: [
        ...Object.keys(workerTaskConfig.keys),
        ...Object.keys(workerExactlyOnceConfig.keys),
        ...Object.keys(metricsConfig.keys),
      ],
      prefixes: [METRICS_HTTPS_PREFIX],
    },
    STANDALONE_WORKER_KEYS,
    REST_WORKER_KEYS,
    KAFKA_WORKER_KEYS,
    KAFKA_CONNECT_WORKER_KEYS,
  );
}

/** Connector settings that users put in the worker file, and where they belong. */
const CONNECTOR_ONLY_KEYS = [...Object.keys(connectorTaskConfig.keys), 'connector.class', 'tasks.max'];

/** The connector's prefix for producer settings; the worker's is `producer.`. */
const PRODUCER_OVERRIDE_PREFIX = 'producer.override.';

/** Keys only `tributary distributed` reads (`heartbeat.interval.ms` is a connector key to the standalone worker). */
const DISTRIBUTED_KEYS = Object.keys(distributedConfig.keys).filter((k) => k !== 'heartbeat.interval.ms');

/**
 * Checks the keys of a worker config: a typo of a known key or a connector setting (including
 * `producer.override.*`) is a {@link ConfigError} naming the file; other unknown keys come back
 * as warnings to log. In `distributed` mode the group and cluster-topic keys are known and
 * `heartbeat.interval.ms` is the group heartbeat; in `standalone` mode they are ignored with a
 * warning saying so.
 */
export function checkWorkerKeys(
  config: Readonly<Record<string, string>>,
  file: string,
  mode: 'standalone' | 'distributed' = 'standalone',
): string[] {
  const where = `worker config ${file}`;
  const base = knownWorkerKeys();
  const connectorOnly =
    mode === 'distributed' ? CONNECTOR_ONLY_KEYS.filter((k) => k !== 'heartbeat.interval.ms') : CONNECTOR_ONLY_KEYS;
  const misplaced = Object.fromEntries([
    ...connectorOnly.map((k) => [k, `the connector config (${k} is a connector setting, not a worker one)`]),
    // Under the worker's own `producer.` prefix, so without this it would pass unread.
    ...Object.keys(config)
      .filter((k) => k.startsWith(PRODUCER_OVERRIDE_PREFIX))
      .map((k) => [
        k,
        `the connector config (${PRODUCER_OVERRIDE_PREFIX}* is a connector setting, not a worker one; ` +
          `the worker's form is producer.${k.slice(PRODUCER_OVERRIDE_PREFIX.length)})`,
      ]),
  ]);
  const distributed = [...DISTRIBUTED_KEYS, ...(mode === 'distributed' ? ['heartbeat.interval.ms'] : [])];
  const known: KnownKeys =
    mode === 'distributed'
      ? { ...base, keys: [...base.keys, ...distributed], unsupported: base.unsupported.filter((k) => !distributed.includes(k)) }
      : {
          ...base,
          keys: base.keys.filter((k) => !DISTRIBUTED_KEYS.includes(k)),
          unsupported: [...new Set([...base.unsupported, ...DISTRIBUTED_KEYS])],
        };
  const check = checkKeys(config, known, { where, misplaced });
  if (check.errors.length > 0)
    throw new ConfigError(
      where,
      check.errors.map((e) => e.message),
    );
  return check.warnings.map((w) =>
    mode === 'standalone' && DISTRIBUTED_KEYS.includes(w.key)
      ? `${where}: "${w.key}" is a setting of tributary distributed; the standalone worker ignores it`
      : w.message,
  );
}
