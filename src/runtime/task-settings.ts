import * as t from 'io-ts';
import { type ConfigProblem, configTypes, defineConfig } from '../api/config-def.js';
import { ConfigError } from '../api/errors.js';
import { CONVERTER_NAMES, type Converter, converterNamed, jsonConverter } from './converters.js';

/** The worker's `heartbeat.topic` when none is configured. */
export const DEFAULT_HEARTBEAT_TOPIC = 'tributary-heartbeats';

/**
 * `task.max.in.flight.records` when no config sets it. Above about 6,000 records of 100 B in flight
 * on two cores, records outlive the main thread's young-generation collections and are copied and
 * promoted, and the kafkajs sender writes about a third less (docs/benchmarks.md, seventh pass).
 */
export const DEFAULT_MAX_IN_FLIGHT_RECORDS = 5_000;

/**
 * `task.max.in.flight.records` when no config sets it, for an exactly-once task whose transactions
 * end at an interval or where the task says: its records stay unacknowledged until their
 * transaction commits, so the bound is also its largest transaction.
 */
export const DEFAULT_MAX_IN_FLIGHT_RECORDS_HELD = 20_000;

/** Worker-level settings that shape every task, as in Kafka Connect where the name exists there. */
export const workerTaskConfig = defineConfig({
  'offset.flush.interval.ms': {
    type: configTypes.positiveInt,
    default: 60_000,
    description: 'How often committable offsets are written to the offset store, in milliseconds.',
  },
  'offset.flush.timeout.ms': {
    type: configTypes.positiveInt,
    default: 5_000,
    description: 'How long one offset flush may take before it is cancelled and retried at the next interval, in milliseconds.',
  },
  'task.shutdown.graceful.timeout.ms': {
    type: configTypes.nonNegativeInt,
    default: 5_000,
    description: 'How long a stopping task waits for its poll round and its in-flight records, in milliseconds.',
  },
  'heartbeat.topic': {
    type: configTypes.string,
    default: DEFAULT_HEARTBEAT_TOPIC,
    description: 'Topic of heartbeat records for every connector that sets no heartbeat.topic of its own.',
  },
  'task.max.in.flight.records': {
    type: configTypes.positiveInt,
    default: DEFAULT_MAX_IN_FLIGHT_RECORDS,
    description:
      'Records sent but not yet acknowledged above which a task waits before its next poll round. ' +
      'Default 5000; 20000 for an exactly-once task with transaction.boundary=interval or connector, whose records stay unacknowledged until their transaction commits.',
  },
  'task.poll.backoff.ms': {
    type: configTypes.nonNegativeInt,
    default: 50,
    description: 'Pause after a poll round that produced no record, in milliseconds.',
  },
  'key.converter': { type: configTypes.string, default: 'json', description: 'Default key converter.' },
  'value.converter': { type: configTypes.string, default: 'json', description: 'Default value converter.' },
});

/** Connector-level settings the runtime owns (the connector's own keys are its config codec's). */
export const connectorTaskConfig = defineConfig({
  'heartbeat.interval.ms': {
    type: configTypes.nonNegativeInt,
    default: 0,
    description: 'Interval between calls of produceHeartbeatRecords(), in milliseconds; 0 (the default) turns heartbeats off.',
  },
  'errors.tolerance': {
    type: configTypes.oneOf('none', 'all'),
    default: 'none',
    description:
      'none: a record a transform or converter cannot handle fails the task; all: such records are skipped (their offsets still commit) and counted.',
  },
  'errors.retry.timeout': {
    type: t.refinement(configTypes.int, (n) => n >= -1, 'integer >= -1'),
    default: 0,
    description: 'How long a RetriableError from a transform is retried, in milliseconds (-1: without end; 0: not retried).',
  },
  'errors.retry.delay.max.ms': {
    type: configTypes.positiveInt,
    default: 60_000,
    description: 'The longest pause between two retries after a RetriableError, in milliseconds.',
  },
  'errors.log.enable': {
    type: configTypes.boolean,
    default: false,
    description: 'Log every transform or conversion failure that errors.tolerance=all skips.',
  },
  'errors.log.include.messages': {
    type: configTypes.boolean,
    default: false,
    description: "With errors.log.enable: include the record's topic, partition, key, value and timestamp in the log.",
  },
});

/**
 * The longest delay Node.js honours for setTimeout / setInterval: a longer one fires after 1 ms
 * with only a TimeoutOverflowWarning.
 */
export const MAX_TIMER_DELAY_MS = 2_147_483_647;

/** Settings used as a timer delay, each with its least value and what that value means (for {@link timerProblems}). */
export type TimerKeys = Readonly<Record<string, { readonly min: number; readonly note?: string }>>;

/**
 * The settings used as a timer delay, with their least value and what that value means. A value
 * above {@link MAX_TIMER_DELAY_MS} would make the timer fire after 1 ms: a flush would time out at
 * once, heartbeats run every millisecond, a stopping task not wait at all.
 */
const WORKER_TIMER_KEYS: TimerKeys = {
  'offset.flush.interval.ms': { min: 1 },
  'offset.flush.timeout.ms': { min: 1 },
  'task.shutdown.graceful.timeout.ms': { min: 0, note: '0: does not wait' },
  'task.poll.backoff.ms': { min: 0, note: '0: no pause' },
};
const CONNECTOR_TIMER_KEYS: TimerKeys = {
  'heartbeat.interval.ms': { min: 0, note: '0: heartbeats off' },
  'errors.retry.delay.max.ms': { min: 1 },
};

/** One problem per key of `keys` in `config` that is an integer above {@link MAX_TIMER_DELAY_MS}. */
export function timerProblems(config: Readonly<Record<string, unknown>>, keys: TimerKeys): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const [key, { min, note }] of Object.entries(keys)) {
    // A value that is no integer at all is already a problem of the config's parse.
    const decoded = configTypes.int.decode(config[key]);
    if (decoded._tag === 'Left' || decoded.right <= MAX_TIMER_DELAY_MS) continue;
    problems.push({
      key,
      message: `Invalid configuration ${key}: expected integer from ${min} to ${MAX_TIMER_DELAY_MS}${note ? ` (${note})` : ''}, got ${decoded.right}: it is a timer delay in milliseconds, and Node.js fires a timer longer than ${MAX_TIMER_DELAY_MS} ms (about 24.8 days) after 1 ms instead`,
    });
  }
  return problems;
}

/** Everything a task's pipeline needs, resolved once: no optional fields on the hot path. */
export interface TaskSettings {
  /** 0 = off. */
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTopic: string;
  readonly flushIntervalMs: number;
  readonly flushTimeoutMs: number;
  readonly shutdownTimeoutMs: number;
  /** `task.max.in.flight.records`, or its default; the runner's bound is {@link inFlightBound}. */
  readonly maxInFlight: number;
  /**
   * `false` when no worker or connector config set `task.max.in.flight.records`, so that its
   * default applies ({@link inFlightBound}); absent (settings built by hand) means `maxInFlight`
   * was chosen and applies as it is.
   */
  readonly maxInFlightSet?: boolean;
  readonly pollBackoffMs: number;
  readonly keyConverter: Converter;
  readonly valueConverter: Converter;
  /** `errors.tolerance=all`: skip records a transform or converter fails on. */
  readonly toleranceAll: boolean;
  /** `errors.retry.timeout`: -1 without end, 0 no retry. */
  readonly retryTimeoutMs: number;
  readonly retryDelayMaxMs: number;
  readonly errorsLog: boolean;
  readonly errorsLogMessages: boolean;
}

/** Task settings a connector's config may set for itself, over the worker's. */
const OVERRIDABLE = ['heartbeat.topic', 'key.converter', 'value.converter', 'task.max.in.flight.records'] as const;
/** Keys a connector's config decides when it sets them (`connector[key] ?? worker[key]`). */
const CONNECTOR_FIRST = ['key.converter.schemas.enable', 'value.converter.schemas.enable'] as const;
/** A connector config that sets every overridable key to a good value: what is left wrong is the worker's alone. */
const GOOD_OVERRIDES: Readonly<Record<string, unknown>> = {
  'heartbeat.topic': DEFAULT_HEARTBEAT_TOPIC,
  'key.converter': 'json',
  'value.converter': 'json',
  'task.max.in.flight.records': 1,
  'key.converter.schemas.enable': 'false',
  'value.converter.schemas.enable': 'false',
};

/**
 * Checks the task settings a worker config gives every connector, at the worker's start:
 *
 * - a bad value of a key only the worker sets (`offset.flush.interval.ms`,
 *   `offset.flush.timeout.ms`, `task.shutdown.graceful.timeout.ms`, `task.poll.backoff.ms`)
 *   throws a {@link ConfigError} naming every such key, so that it is reported as the worker
 *   config's, not as a fault of the first connector (or, with none, not at all until one is
 *   created);
 * - a bad value of a key a connector may set for itself (`task.max.in.flight.records`, the
 *   converters and their `schemas.enable`, `heartbeat.topic`) is returned as a warning: a
 *   connector that sets its own runs, one that does not is refused with that value named as
 *   the worker's.
 *
 * @returns The warnings: the problems of the bad overridable keys, all of them; empty when all is well.
 * @example
 * ```ts
 * checkWorkerTaskSettings({ 'offset.flush.interval.ms': '60000' }); // []
 * checkWorkerTaskSettings({ 'task.max.in.flight.records': 'abc' });
 * // ['Invalid configuration task.max.in.flight.records: expected integer >= 1, got "abc"
 * //   (the worker config\'s value, which a connector config can override)']
 * // checkWorkerTaskSettings({ 'offset.flush.interval.ms': '0' }) throws
 * // "Invalid worker config: Invalid configuration offset.flush.interval.ms: expected integer >= 1, got 0"
 * ```
 */
export function checkWorkerTaskSettings(worker: Readonly<Record<string, unknown>>): string[] {
  const own = problemsOf(worker, GOOD_OVERRIDES);
  if (own.length > 0) throw new ConfigError('worker config', own);
  return problemsOf(worker, {});
}

/** After a problem with a value a connector takes from the worker config. */
const FROM_WORKER = "(the worker config's value, which a connector config can override)";

/** The problems resolveTaskSettings finds, as messages (none: an empty list). */
function problemsOf(worker: Readonly<Record<string, unknown>>, connector: Readonly<Record<string, unknown>>): string[] {
  try {
    resolveTaskSettings(worker, connector);
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return [...e.problems];
    throw e;
  }
}

/**
 * Resolves a task's settings from the worker config and the connector config. The connector's
 * `heartbeat.topic`, `key.converter`, `value.converter` and `task.max.in.flight.records` win
 * over the worker's. Throws a {@link ConfigError} naming every bad key.
 */
export function resolveTaskSettings(
  worker: Readonly<Record<string, unknown>>,
  connector: Readonly<Record<string, unknown>>,
): TaskSettings {
  const merged: Record<string, unknown> = { ...worker };
  // A null is no value (defineConfig reads it as missing), so it neither overrides nor counts as set.
  for (const key of OVERRIDABLE) if (connector[key] !== undefined && connector[key] !== null) merged[key] = connector[key];
  const w = workerTaskConfig.parse(merged);
  const c = connectorTaskConfig.parse(connector);
  const problems: ConfigProblem[] = [
    ...(w.ok ? [] : w.problems),
    ...(c.ok ? [] : c.problems),
    ...timerProblems(merged, WORKER_TIMER_KEYS),
    ...timerProblems(connector, CONNECTOR_TIMER_KEYS),
  ];
  const converter = (key: 'key.converter' | 'value.converter'): Converter => {
    const given: unknown = merged[key];
    const name = String(given ?? 'json');
    const found = converterNamed(name);
    // A value that is no string (a worker built in code) already has its type problem: one is enough.
    if (!found && (given === undefined || given === null || typeof given === 'string')) {
      problems.push({ key, message: `Unknown ${key} "${name}": accepted are ${CONVERTER_NAMES.join(', ')}` });
    }
    const schemas = connector[`${key}.schemas.enable`] ?? worker[`${key}.schemas.enable`];
    // Only the JSON converter has a schema envelope: Kafka Connect's string and bytes converters
    // ignore the key, as here. A boolean is read as Kafka Connect reads it: case aside, around
    // white space.
    const envelope = found === undefined || found === jsonConverter;
    if (envelope && schemas !== undefined && schemas !== null && String(schemas).trim().toLowerCase() !== 'false') {
      problems.push({
        key: `${key}.schemas.enable`,
        message: `${key}.schemas.enable=${String(schemas)} is not supported: Tributary writes JSON without the schema envelope; set it to false or leave it out`,
      });
    }
    return found ?? (() => null);
  };
  const keyConverter = converter('key.converter');
  const valueConverter = converter('value.converter');
  const topic = w.ok ? w.value['heartbeat.topic'] : '';
  // Checked whatever else is wrong, so that every bad key is named at once.
  const topicGiven = w.ok ? topic : merged['heartbeat.topic'];
  if (typeof topicGiven === 'string' && topicGiven.trim() === '') {
    problems.push({ key: 'heartbeat.topic', message: 'heartbeat.topic must not be empty' });
  }
  if (!w.ok || !c.ok || problems.length > 0) {
    // A bad value the connector could have set for itself but took from the worker: say whose it is.
    const overridable: readonly string[] = [...OVERRIDABLE, ...CONNECTOR_FIRST];
    const fromWorker = (key: string): boolean =>
      overridable.includes(key) && (connector[key] === undefined || connector[key] === null) && worker[key] != null;
    throw new ConfigError(
      'task settings',
      problems.map((p) => (fromWorker(p.key) ? `${p.message} ${FROM_WORKER}` : p.message)),
    );
  }
  return {
    heartbeatIntervalMs: c.value['heartbeat.interval.ms'],
    heartbeatTopic: topic,
    flushIntervalMs: w.value['offset.flush.interval.ms'],
    flushTimeoutMs: w.value['offset.flush.timeout.ms'],
    shutdownTimeoutMs: w.value['task.shutdown.graceful.timeout.ms'],
    maxInFlight: w.value['task.max.in.flight.records'],
    maxInFlightSet: merged['task.max.in.flight.records'] !== undefined && merged['task.max.in.flight.records'] !== null,
    pollBackoffMs: w.value['task.poll.backoff.ms'],
    keyConverter,
    valueConverter,
    toleranceAll: c.value['errors.tolerance'] === 'all',
    retryTimeoutMs: c.value['errors.retry.timeout'],
    retryDelayMaxMs: c.value['errors.retry.delay.max.ms'],
    errorsLog: c.value['errors.log.enable'],
    errorsLogMessages: c.value['errors.log.include.messages'],
  };
}

/**
 * The records a task may have sent and not yet acknowledged before it waits to poll again:
 * `task.max.in.flight.records` when a config sets it; else {@link DEFAULT_MAX_IN_FLIGHT_RECORDS_HELD}
 * for an exactly-once task whose transactions end at an interval or where the task says (its
 * records stay unacknowledged until their transaction commits), and
 * {@link DEFAULT_MAX_IN_FLIGHT_RECORDS} for every other task.
 *
 * @example
 * ```ts
 * const settings = resolveTaskSettings({}, {});
 * inFlightBound(settings, undefined); // 5000
 * inFlightBound(settings, { boundary: 'interval' }); // 20000
 * inFlightBound(resolveTaskSettings({ 'task.max.in.flight.records': 800 }, {}), { boundary: 'interval' }); // 800
 * ```
 */
export function inFlightBound(
  settings: Pick<TaskSettings, 'maxInFlight' | 'maxInFlightSet'>,
  transactions: { readonly boundary: 'poll' | 'interval' | 'connector' } | undefined,
): number {
  if (settings.maxInFlightSet !== false) return settings.maxInFlight;
  const held = transactions !== undefined && transactions.boundary !== 'poll';
  return held ? DEFAULT_MAX_IN_FLIGHT_RECORDS_HELD : settings.maxInFlight;
}
