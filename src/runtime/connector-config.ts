import type { ConfigKey, ConfigProblem } from '../api/config-def.js';
import { configTypes, defineConfig, parseConfigBoolean } from '../api/config-def.js';
import type { SourceConnector } from '../api/source-connector.js';
import type { ConnectConfigType } from '../transforms/key-presentations.js';
import { CONNECTOR_RUNTIME_KEYS, checkKeys, editDistance, maxTypoEdits, mergeKnownKeys } from './config-keys.js';
import { CONVERTER_NAMES } from './converters.js';
import { connectorExactlyOnceConfig, exactlyOnceProblems, resolveTransactionSettings } from './exactly-once-settings.js';
import { isSecretKey } from './secret-masking.js';
import {
  connectorTaskConfig,
  DEFAULT_MAX_IN_FLIGHT_RECORDS,
  inFlightBound,
  resolveTaskSettings,
  workerTaskConfig,
} from './task-settings.js';
import { checkTopicCreationSettings } from './topic-creation-settings.js';
import type { AliasKeys } from './transform-chain.js';

/** Connector config keys the runtime owns, beside the connector's own. */
export const runtimeConnectorConfig = defineConfig({
  name: { type: configTypes.string, description: 'Unique name of the connector.' },
  'connector.class': {
    type: configTypes.string,
    description: 'The connector: a module path or package with an optional #ExportName.',
  },
  'tasks.max': { type: configTypes.positiveInt, default: 1, description: 'The most tasks this connector may run.' },
});

/** Worker settings a connector config may override (the connector's value wins). */
const OVERRIDABLE_WORKER_KEYS = ['heartbeat.topic', 'key.converter', 'value.converter', 'task.max.in.flight.records'] as const;

/** Every key the runtime reads from a connector config, for matching problems to keys. */
const RUNTIME_KEYS = [
  ...Object.keys(runtimeConnectorConfig.keys),
  ...Object.keys(connectorTaskConfig.keys),
  ...Object.keys(workerTaskConfig.keys),
  ...Object.keys(connectorExactlyOnceConfig.keys),
  'key.converter.schemas.enable',
  'value.converter.schemas.enable',
];

/** Worker settings that a connector config cannot set: an error that says they belong in the worker config. */
const WORKER_ONLY_KEYS = [
  'offset.flush.interval.ms',
  'offset.flush.timeout.ms',
  'task.shutdown.graceful.timeout.ms',
  'task.poll.backoff.ms',
];

/**
 * What {@link validateConnectorConfig} finds: the decoded connector config (with warnings about
 * keys nothing reads), or problems per key.
 */
export type ValidatedConfig<C> =
  | { ok: true; config: C; tasksMax: number; warnings: ConfigProblem[] }
  | { ok: false; problems: ConfigProblem[]; warnings: ConfigProblem[] };

/**
 * Validates a connector config: the runtime's keys (`name`, `connector.class`, `tasks.max`,
 * heartbeat and converter settings) and the connector's own, through its config definition.
 * Every problem names the key it is about. A key one or two edits from a known key (the
 * runtime's or the connector's own) is a problem naming the key it probably meant; a worker
 * setting is a problem saying where it belongs; any other key nothing reads is a warning. The
 * KIP-158 `topic.creation.*` settings are checked too (see {@link checkTopicCreationSettings}),
 * unless the worker sets `topic.creation.enable=false` (then they are one warning).
 *
 * @param where How messages name the config, e.g. `connector 'pg'` or `connector config pg.properties`.
 */
export function validateConnectorConfig<C>(
  connector: SourceConnector<C>,
  raw: Readonly<Record<string, unknown>>,
  workerConfig: Readonly<Record<string, unknown>>,
  where = `connector ${typeof raw.name === 'string' ? `'${raw.name}'` : 'config'}`,
): ValidatedConfig<C> {
  const runtime = runtimeConnectorConfig.parse(raw);
  const own = connector.config.parse(raw);
  // Config providers are the worker's: here nothing reads them (Kafka Connect ignores them too),
  // a warning that says where they belong rather than a refusal of a stored config.
  const providerKeys = Object.keys(raw).filter((k) => k === 'config.providers' || k.startsWith('config.providers.'));
  const keyCheck = checkKeys(
    Object.fromEntries(Object.entries(raw).filter(([k]) => !providerKeys.includes(k))),
    mergeKnownKeys({ keys: [...RUNTIME_KEYS, ...Object.keys(connector.config.keys)] }, CONNECTOR_RUNTIME_KEYS),
    { where, misplaced: Object.fromEntries(WORKER_ONLY_KEYS.map((k) => [k, 'the worker config'])) },
  );
  const typos = keyCheck.errors;
  const problems: ConfigProblem[] = [
    ...(runtime.ok ? [] : runtime.problems),
    ...(own.ok ? [] : own.problems.map((p) => withNearMiss(p, raw, typos))),
    ...typos,
  ];
  const warnings = [
    ...keyCheck.warnings,
    ...providerKeys.map((key) => ({
      key,
      message: `${where}: "${key}" is ignored in a connector config: config providers are defined in the worker config, and a connector config uses them as $\{provider:path:key}`,
    })),
    // KIP-891 version pins of transforms and predicates: Tributary loads the one version installed.
    ...Object.keys(raw)
      .filter((k) => /^(transforms|predicates)\.[^.]+\.plugin\.version$/.test(k))
      .map((key) => ({
        key,
        message: `${where}: "${key}" is a Kafka Connect setting that Tributary does not implement; it is ignored`,
      })),
  ];
  try {
    resolveTaskSettings(workerConfig, raw);
  } catch (e) {
    for (const message of (e as { problems?: string[] }).problems ?? [(e as Error).message]) {
      problems.push({ key: runtimeKeyIn(message), message });
    }
  }
  problems.push(...exactlyOnceProblems(connector, own.ok ? own.value : undefined, raw, workerConfig));
  // KIP-158 topic creation, whatever the sender. A bad worker value (topic.creation.enable=flase)
  // is reported by the worker's own check; here it counts as on, so the keys are still checked.
  const topicCreation = checkTopicCreationSettings(raw, {
    workerEnabled: parseConfigBoolean(workerConfig['topic.creation.enable']) ?? true,
  });
  problems.push(...topicCreation.problems);
  warnings.push(...topicCreation.warnings);
  if (!runtime.ok || !own.ok || problems.length > 0) return { ok: false, problems, warnings };
  return { ok: true, config: own.value, tasksMax: runtime.value['tasks.max'], warnings };
}

/** A "missing required" problem, with the given key that is a near miss of it (`tabel` for `table`). */
function withNearMiss(
  problem: ConfigProblem,
  raw: Readonly<Record<string, unknown>>,
  typos: readonly ConfigProblem[],
): ConfigProblem {
  if (raw[problem.key] !== undefined || !problem.message.startsWith('Missing required')) return problem;
  const limit = maxTypoEdits(problem.key);
  const near = typos.map((t) => t.key).find((k) => editDistance(k, problem.key, limit) <= limit);
  return near === undefined ? problem : { key: problem.key, message: `${problem.message} ("${near}" was given: a typo?)` };
}

/** The longest runtime key named in a problem message (`''` when none is). */
function runtimeKeyIn(message: string): string {
  let found = '';
  for (const key of RUNTIME_KEYS) if (key.length > found.length && message.includes(key)) found = key;
  return found;
}

/**
 * The group of a key of a {@link ConfigReport}: one of Kafka Connect's framework groups
 * ({@link FRAMEWORK_GROUPS}) for the runtime's keys, `Transforms: <alias>` or
 * `Predicates: <alias>` for the keys of a transform or predicate alias, `Connector` for the
 * connector's own.
 */
export type ConfigGroup = (typeof FRAMEWORK_GROUPS)[number] | `Transforms: ${string}` | `Predicates: ${string}` | 'Connector';

/**
 * Kafka Connect's groups of a source connector's framework keys, in its order (4.3.1's
 * ConnectorConfig and SourceConnectorConfig): the `groups` of every config/validate answer.
 */
export const FRAMEWORK_GROUPS = [
  'Common',
  'Transforms',
  'Predicates',
  'Error Handling',
  'Topic Creation',
  'Exactly Once Support',
  'offsets.topic',
] as const;

/** Kafka Connect's ConfigDef.Width: how wide a UI shows a key's field. */
export type ConfigWidth = 'NONE' | 'SHORT' | 'MEDIUM' | 'LONG';

/** Kafka Connect's ConfigDef.Importance. */
export type ConfigImportance = 'HIGH' | 'MEDIUM' | 'LOW';

/**
 * How Kafka Connect presents a framework key in `config/validate` (its ConfigKeyInfo), where
 * Tributary's declaration (a {@link ConfigKey}) has no such field.
 */
export interface KeyPresentation {
  readonly group: ConfigGroup;
  /** Kafka Connect's `order_in_group` of the key (its numbering, gaps included). */
  readonly order: number;
  readonly width: ConfigWidth;
  readonly displayName: string;
  readonly importance: ConfigImportance;
  /**
   * Kafka Connect's type where the io-ts type does not tell it: `LONG` for a millisecond
   * setting, `CLASS` for a converter or a transform's `type`, `LIST` for a transform's list.
   */
  readonly type?: ConnectConfigType | undefined;
  /** `recommended_values` where the type does not list them (converter names). */
  readonly recommended?: readonly string[];
}

const listKey = (description: string): ConfigKey<unknown> => ({
  type: configTypes.list as ConfigKey<unknown>['type'],
  default: [],
  description,
});

/**
 * The framework keys of a connector config in Kafka Connect's order, with Kafka Connect's
 * group, `order_in_group`, width, display name and importance (4.3.1; the recorded answers
 * are test/fixtures/connect-validate). Kafka Connect keys Tributary does not implement
 * (`connector.plugin.version`, `tasks.max.enforce`, `header.converter`, the
 * `*.plugin.version` pins, `config.action.reload`) are not listed; Tributary's own
 * (`heartbeat.interval.ms`, `heartbeat.topic`, `task.max.in.flight.records`) close group
 * Common, numbered after Kafka Connect's last Common key.
 */
const FRAMEWORK_KEYS: ReadonlyArray<{
  readonly name: string;
  readonly key: ConfigKey<unknown>;
  readonly shown: KeyPresentation;
}> = (() => {
  const runtime = runtimeConnectorConfig.keys as Record<string, ConfigKey<unknown>>;
  const task = connectorTaskConfig.keys as Record<string, ConfigKey<unknown>>;
  const worker = workerTaskConfig.keys as Record<string, ConfigKey<unknown>>;
  const eos = connectorExactlyOnceConfig.keys as Record<string, ConfigKey<unknown>>;
  const converters = { recommended: CONVERTER_NAMES, type: 'CLASS' } as const;
  const rows: Array<[string, ConfigKey<unknown> | undefined, KeyPresentation]> = [
    ['name', runtime.name, { group: 'Common', order: 1, width: 'MEDIUM', displayName: 'Connector name', importance: 'HIGH' }],
    [
      'connector.class',
      runtime['connector.class'],
      { group: 'Common', order: 2, width: 'LONG', displayName: 'Connector class', importance: 'HIGH' },
    ],
    [
      'tasks.max',
      runtime['tasks.max'],
      { group: 'Common', order: 4, width: 'SHORT', displayName: 'Tasks max', importance: 'HIGH' },
    ],
    [
      'key.converter',
      worker['key.converter'],
      { group: 'Common', order: 6, width: 'SHORT', displayName: 'Key converter class', importance: 'LOW', ...converters },
    ],
    [
      'value.converter',
      worker['value.converter'],
      { group: 'Common', order: 8, width: 'SHORT', displayName: 'Value converter class', importance: 'LOW', ...converters },
    ],
    [
      'transforms',
      listKey('Aliases of the transformations applied to records, in order.'),
      { group: 'Transforms', order: 12, width: 'LONG', displayName: 'Transforms', importance: 'LOW' },
    ],
    [
      'predicates',
      listKey('Aliases of the predicates used by transformations.'),
      { group: 'Predicates', order: 13, width: 'LONG', displayName: 'Predicates', importance: 'LOW' },
    ],
    [
      'heartbeat.interval.ms',
      task['heartbeat.interval.ms'],
      { group: 'Common', order: 15, width: 'SHORT', displayName: 'Heartbeat interval', importance: 'MEDIUM' },
    ],
    [
      'heartbeat.topic',
      worker['heartbeat.topic'],
      { group: 'Common', order: 16, width: 'MEDIUM', displayName: 'Heartbeat topic', importance: 'MEDIUM' },
    ],
    [
      'task.max.in.flight.records',
      worker['task.max.in.flight.records'],
      { group: 'Common', order: 17, width: 'SHORT', displayName: 'Max in-flight records', importance: 'LOW' },
    ],
    [
      'errors.retry.timeout',
      task['errors.retry.timeout'],
      {
        group: 'Error Handling',
        order: 1,
        width: 'MEDIUM',
        displayName: 'Retry Timeout for Errors',
        importance: 'MEDIUM',
        type: 'LONG',
      },
    ],
    [
      'errors.retry.delay.max.ms',
      task['errors.retry.delay.max.ms'],
      {
        group: 'Error Handling',
        order: 2,
        width: 'MEDIUM',
        displayName: 'Maximum Delay Between Retries for Errors',
        importance: 'MEDIUM',
        type: 'LONG',
      },
    ],
    [
      'errors.tolerance',
      task['errors.tolerance'],
      { group: 'Error Handling', order: 3, width: 'SHORT', displayName: 'Error Tolerance', importance: 'MEDIUM' },
    ],
    [
      'errors.log.enable',
      task['errors.log.enable'],
      { group: 'Error Handling', order: 4, width: 'SHORT', displayName: 'Log Errors', importance: 'MEDIUM' },
    ],
    [
      'errors.log.include.messages',
      task['errors.log.include.messages'],
      { group: 'Error Handling', order: 5, width: 'SHORT', displayName: 'Log Error Details', importance: 'MEDIUM' },
    ],
    [
      'topic.creation.groups',
      listKey(
        'Aliases of topic creation groups beside default, each with its topic.creation.<group>.* settings (KIP-158); the first group whose include matches a topic sets how it is created.',
      ),
      { group: 'Topic Creation', order: 1, width: 'LONG', displayName: 'Topic Creation Groups', importance: 'LOW' },
    ],
    [
      'exactly.once.support',
      eos['exactly.once.support'],
      { group: 'Exactly Once Support', order: 2, width: 'SHORT', displayName: 'Exactly once support', importance: 'MEDIUM' },
    ],
    [
      'transaction.boundary',
      eos['transaction.boundary'],
      { group: 'Exactly Once Support', order: 3, width: 'SHORT', displayName: 'Transaction Boundary', importance: 'MEDIUM' },
    ],
    [
      'transaction.boundary.interval.ms',
      eos['transaction.boundary.interval.ms'],
      {
        group: 'Exactly Once Support',
        order: 4,
        width: 'SHORT',
        displayName: 'Transaction boundary interval',
        importance: 'LOW',
        type: 'LONG',
      },
    ],
    [
      'offsets.storage.topic',
      eos['offsets.storage.topic'],
      { group: 'offsets.topic', order: 1, width: 'LONG', displayName: 'Offsets topic', importance: 'LOW' },
    ],
  ];
  return rows.map(([name, key, shown]) => {
    if (key === undefined) throw new Error(`framework key ${name} is declared nowhere`);
    return { name, key, shown };
  });
})();

/** One key of a {@link ConfigReport}. */
export interface ConfigKeyReport {
  readonly name: string;
  /** Its declaration; undefined for a key that was given but is declared nowhere. */
  readonly definition: ConfigKey<unknown> | undefined;
  readonly group: ConfigGroup | undefined;
  /** Kafka Connect's presentation of a framework key; undefined for the connector's own keys. */
  readonly presentation?: KeyPresentation;
  /** Whether the key must be given: it is declared without a default (a `default: undefined` is optional). */
  readonly required?: boolean;
  /** Default, as a worker setting or the declaration gives it (undefined: none). */
  readonly defaultValue: unknown;
  /** The given value, else the default, else undefined. */
  readonly value: unknown;
  /** Whether the value must be masked. */
  readonly secret: boolean;
  readonly errors: readonly string[];
  /** Why a key that is given but declared nowhere is ignored (not an error: the config still works). */
  readonly warnings: readonly string[];
}

/** Every key of a connector config with its declaration, value and problems (for the validate endpoint). */
export interface ConfigReport {
  readonly keys: readonly ConfigKeyReport[];
  readonly errorCount: number;
}

/**
 * Reports on a connector config key by key: the runtime's keys in Kafka Connect's framework
 * groups and order (`Common`, `Transforms`, `Predicates`, `Error Handling`, `Topic Creation`,
 * `Exactly Once Support`, `offsets.topic`), the keys of each transform and predicate alias
 * (`aliases`, from `prepareTransforms`: group `Transforms: <alias>` and so on), the
 * connector's own (group `Connector`), then keys given but declared nowhere. Problems are those
 * of {@link validateConnectorConfig}, attached to their keys.
 */
export function reportConnectorConfig(
  connector: SourceConnector,
  raw: Readonly<Record<string, unknown>>,
  workerConfig: Readonly<Record<string, unknown>>,
  aliases: readonly AliasKeys[] = [],
): ConfigReport {
  const validated = validateConnectorConfig(connector, raw, workerConfig);
  const problems = validated.ok ? [] : validated.problems;
  const warnings = validated.warnings;
  const passwords = connector.config.passwords;
  const reports: ConfigKeyReport[] = [];
  const seen = new Set<string>();
  const add = (
    name: string,
    definition: ConfigKey<unknown> | undefined,
    group: ConfigGroup | undefined,
    defaultValue: unknown,
    presentation?: KeyPresentation,
  ) => {
    if (seen.has(name)) return;
    seen.add(name);
    const given = raw[name];
    reports.push({
      name,
      definition,
      group,
      ...(presentation ? { presentation } : {}),
      required: definition !== undefined && !('default' in definition),
      defaultValue,
      value: given ?? defaultValue,
      // A transform's own password setting is declared by its class, not the connector's.
      secret: isSecretKey(name, passwords) || definition?.password === true,
      errors: problems.filter((p) => p.key === name).map((p) => p.message),
      warnings: warnings.filter((p) => p.key === name).map((p) => p.message),
    });
  };
  for (const { name, key, shown } of FRAMEWORK_KEYS) {
    const worker = (OVERRIDABLE_WORKER_KEYS as readonly string[]).includes(name);
    const defaultValue =
      name === 'task.max.in.flight.records'
        ? inFlightDefault(raw, workerConfig)
        : worker
          ? (workerConfig[name] ?? key.default)
          : key.default;
    add(name, key, shown.group, defaultValue, shown);
  }
  for (const { group, keys } of aliases) {
    for (const k of keys) {
      const { width, displayName, importance, type, recommended, order } = k;
      add(k.name, k.key, group, k.key.default, { group, order, width, displayName, importance, type, recommended });
    }
  }
  for (const [name, key] of Object.entries(connector.config.keys)) add(name, key, 'Connector', key.default);
  for (const name of Object.keys(raw)) add(name, undefined, undefined, undefined);
  for (const p of problems) if (!seen.has(p.key)) add(p.key, undefined, undefined, undefined);
  return { keys: reports, errorCount: problems.length };
}

/**
 * The `task.max.in.flight.records` this connector's tasks get unless its config sets the key:
 * the worker's, else the default for the task's delivery ({@link inFlightBound}: higher for an
 * exactly-once task whose records wait for their transaction).
 */
function inFlightDefault(raw: Readonly<Record<string, unknown>>, workerConfig: Readonly<Record<string, unknown>>): unknown {
  const { 'task.max.in.flight.records': _, ...withoutKey } = raw;
  try {
    return inFlightBound(resolveTaskSettings(workerConfig, withoutKey), resolveTransactionSettings(workerConfig, withoutKey));
  } catch {
    // A bad setting elsewhere is reported on its own key; show the plain default here.
    return workerConfig['task.max.in.flight.records'] ?? DEFAULT_MAX_IN_FLIGHT_RECORDS;
  }
}
