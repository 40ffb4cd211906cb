import { type ConfigProblem, configTypes, defineConfig } from '../api/config-def.js';
import { ConfigError } from '../api/errors.js';
import type { SourceConnector } from '../api/source-connector.js';
import { type TimerKeys, timerProblems } from './task-settings.js';

/** Worker-level exactly-once setting (KIP-618), as in Kafka Connect. */
export const workerExactlyOnceConfig = defineConfig({
  'exactly.once.source.support': {
    type: configTypes.oneOf('disabled', 'enabled', 'preparing'),
    default: 'disabled',
    description:
      'enabled: every source task writes its records and their offsets in Kafka transactions (see docs/exactly-once.md); ' +
      'disabled (the default): at-least-once. preparing is a step of a Kafka Connect cluster upgrade and is refused here.',
  },
});

/** Connector-level exactly-once settings (KIP-618), as in Kafka Connect. */
export const connectorExactlyOnceConfig = defineConfig({
  'exactly.once.support': {
    type: configTypes.oneOf('requested', 'required'),
    default: 'requested',
    description:
      "required: refuse the connector unless the worker has exactly.once.source.support=enabled and the connector's exactlyOnceSupport() says supported.",
  },
  'transaction.boundary': {
    type: configTypes.oneOf('poll', 'interval', 'connector'),
    default: 'poll',
    description:
      'Where transactions end with exactly.once.source.support=enabled: after each poll round (poll), every transaction.boundary.interval.ms (interval), or where the task says (connector).',
  },
  'transaction.boundary.interval.ms': {
    type: configTypes.positiveInt,
    default: undefined as unknown as number,
    description: 'With transaction.boundary=interval: time between commits, in milliseconds; default offset.flush.interval.ms.',
  },
  'offsets.storage.topic': {
    type: configTypes.string,
    default: undefined as unknown as string,
    description:
      "This connector's own offsets topic (KIP-618), created compacted at start like offset.storage.topic: its offsets are written there (in the task's transactions with exactly-once) and read from it first, then from the worker's offset.storage.topic.",
  },
});

/** The connector's exactly-once settings used as a timer delay (see {@link timerProblems}). */
const TRANSACTION_TIMER_KEYS: TimerKeys = { 'transaction.boundary.interval.ms': { min: 1 } };

/** Where a task's transactions end. */
export type TransactionBoundary = 'poll' | 'interval' | 'connector';

/** A task's transaction settings, resolved once; absent when exactly-once is off. */
export interface TransactionSettings {
  readonly boundary: TransactionBoundary;
  /** With `interval`: time between commits (ms). */
  readonly intervalMs: number;
}

/**
 * Whether the worker runs source tasks exactly-once (`exactly.once.source.support=enabled`).
 * Throws a {@link ConfigError} for a value other than `disabled` or `enabled`.
 */
export function workerExactlyOnce(worker: Readonly<Record<string, unknown>>): boolean {
  const problems = workerExactlyOnceProblems(worker);
  if (problems.length > 0)
    throw new ConfigError(
      'worker config',
      problems.map((p) => p.message),
    );
  return worker['exactly.once.source.support'] === 'enabled';
}

function workerExactlyOnceProblems(worker: Readonly<Record<string, unknown>>): ConfigProblem[] {
  const parsed = workerExactlyOnceConfig.parse(worker);
  if (!parsed.ok) return parsed.problems;
  if (parsed.value['exactly.once.source.support'] === 'preparing') {
    return [
      {
        key: 'exactly.once.source.support',
        message:
          'exactly.once.source.support=preparing is the first step of turning exactly-once on across a Kafka Connect cluster; Tributary has no rolling switch-over (stop every worker of a cluster, then start them with enabled): set enabled or disabled',
      },
    ];
  }
  return [];
}

/**
 * KIP-618's checks of a connector config, at create and in validate: the settings decode;
 * `exactly.once.support=required` needs a worker with exactly-once enabled and a connector whose
 * `exactlyOnceSupport(config)` says `supported`; `transaction.boundary=connector` needs
 * `canDefineTransactionBoundaries(config)` to say `supported`. `config` is the connector's decoded
 * config, or undefined when it did not decode (the connector's methods are then not asked).
 */
export function exactlyOnceProblems<C>(
  connector: SourceConnector<C>,
  config: C | undefined,
  raw: Readonly<Record<string, unknown>>,
  worker: Readonly<Record<string, unknown>>,
): ConfigProblem[] {
  const parsed = connectorExactlyOnceConfig.parse(raw);
  if (!parsed.ok) return parsed.problems;
  const problems: ConfigProblem[] = timerProblems(raw, TRANSACTION_TIMER_KEYS);
  const workerProblems = workerExactlyOnceProblems(worker);
  const enabled = workerProblems.length === 0 && worker['exactly.once.source.support'] === 'enabled';
  const v = parsed.value;
  const topic = v['offsets.storage.topic'];
  if (topic !== undefined && !/^[a-zA-Z0-9._-]{1,249}$/.test(topic)) {
    problems.push({
      key: 'offsets.storage.topic',
      message: `offsets.storage.topic=${JSON.stringify(topic)} is not a valid Kafka topic name: use 1 to 249 characters of a-z, A-Z, 0-9, '.', '_' and '-' (or leave it out to use the worker's offset.storage.topic)`,
    });
  }
  if (v['transaction.boundary.interval.ms'] !== undefined && v['transaction.boundary'] !== 'interval') {
    problems.push({
      key: 'transaction.boundary.interval.ms',
      message: `transaction.boundary.interval.ms is set but transaction.boundary is ${v['transaction.boundary']}: it applies to transaction.boundary=interval only`,
    });
  }
  if (v['exactly.once.support'] === 'required') {
    if (!enabled) {
      problems.push({
        key: 'exactly.once.support',
        message:
          'exactly.once.support=required, but this worker does not deliver exactly once: set exactly.once.source.support=enabled in the worker config, or exactly.once.support=requested',
      });
    } else if (config !== undefined) {
      const support = askConnector(() => connector.exactlyOnceSupport(config));
      if (support !== 'supported') {
        problems.push({
          key: 'exactly.once.support',
          message: `exactly.once.support=required, but the connector ${support === 'unsupported' ? 'cannot deliver exactly once' : support === undefined ? 'does not say it can deliver exactly once (its exactlyOnceSupport() returns undefined)' : `failed to say whether it can deliver exactly once: ${support.error}`} with this config: use exactly.once.support=requested or another config`,
        });
      }
    }
  }
  if (v['transaction.boundary'] === 'connector' && config !== undefined) {
    const can = askConnector(() => connector.canDefineTransactionBoundaries(config));
    if (can !== 'supported') {
      problems.push({
        key: 'transaction.boundary',
        message: `transaction.boundary=connector, but the connector ${can === 'unsupported' || can === undefined ? 'does not define transaction boundaries (its canDefineTransactionBoundaries() does not return supported)' : `failed to say whether it defines transaction boundaries: ${can.error}`}: use poll or interval`,
      });
    }
  }
  return problems;
}

function askConnector<R>(ask: () => R): R | { error: string } {
  try {
    return ask();
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * A task's transaction settings: undefined when the worker's `exactly.once.source.support` is
 * not `enabled`. Throws a {@link ConfigError} for a bad setting.
 */
export function resolveTransactionSettings(
  worker: Readonly<Record<string, unknown>>,
  connector: Readonly<Record<string, unknown>>,
): TransactionSettings | undefined {
  if (!workerExactlyOnce(worker)) return undefined;
  const parsed = connectorExactlyOnceConfig.parse(connector);
  const problems = [...(parsed.ok ? [] : parsed.problems), ...timerProblems(connector, TRANSACTION_TIMER_KEYS)];
  if (!parsed.ok || problems.length > 0)
    throw new ConfigError(
      'connector config',
      problems.map((p) => p.message),
    );
  const flush = Number(worker['offset.flush.interval.ms'] ?? 60_000);
  return {
    boundary: parsed.value['transaction.boundary'],
    intervalMs: parsed.value['transaction.boundary.interval.ms'] ?? (Number.isSafeInteger(flush) && flush > 0 ? flush : 60_000),
  };
}

/**
 * The transactional id of a task's producer. Kafka Connect's form is
 * `${group.id}-${connector}-${task}`; a standalone worker has no group, so the prefix is the
 * worker's `group.id` when set, else its `offset.storage.topic`: workers that share an offsets
 * topic share the offsets of a connector of one name, so they must fence each other's tasks of
 * that connector, and workers with different offsets topics are different deployments that
 * must not.
 */
export function transactionalId(
  worker: Readonly<Record<string, unknown>>,
  offsetsTopic: string,
  connector: string,
  task: number,
): string {
  const group = worker['group.id'];
  const prefix = typeof group === 'string' && group.trim() !== '' ? group : offsetsTopic;
  return `${prefix}-${connector}-${task}`;
}
