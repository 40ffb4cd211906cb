import type { ConfigProblem } from '../api/config-def.js';
import { ConfigError } from '../api/errors.js';
import { probableKey } from './config-keys.js';

const PREFIX = 'topic.creation.';
const GROUPS_KEY = `${PREFIX}groups`;
/** A worker setting (Kafka Connect's WorkerConfig); in a connector config it is a mistake. */
const ENABLE_KEY = `${PREFIX}enable`;
const DEFAULT_GROUP = 'default';
const GROUP_SETTINGS = ['include', 'exclude', 'replication.factor', 'partitions'];
const RESERVED = new Set(GROUP_SETTINGS);
const MAX_REPLICATION_FACTOR = 32_767; // a Java short, as in the CreateTopics request
const MAX_PARTITIONS = 2_147_483_647; // a Java int

/** How to create one topic: the outcome of matching its name against the topic creation groups. */
export interface NewTopicSettings {
  /** The group that matched (`default` when none of the listed groups did). */
  readonly group: string;
  /** Partition count; -1 = the broker's `num.partitions`. */
  readonly partitions: number;
  /** Replication factor; -1 = the broker's `default.replication.factor`. */
  readonly replicationFactor: number;
  /** Topic-level configs, e.g. `{ 'cleanup.policy': 'compact' }`. */
  readonly configs: Readonly<Record<string, string>>;
}

/** One topic creation group (KIP-158) as parsed from the connector config. */
export interface TopicCreationGroup extends NewTopicSettings {
  /** Full-match regex built from `include` (null for the default group, which takes every topic). */
  readonly include: RegExp | null;
  /** Full-match regex built from `exclude`; exclusion wins over inclusion. */
  readonly exclude: RegExp | null;
  /** True if the topic is included and not excluded (always true for the default group). */
  matches(topic: string): boolean;
}

/** The parsed `topic.creation.*` settings of a source connector. */
export interface TopicCreationSettings {
  /** The listed groups, in `topic.creation.groups` order (without `default`). */
  readonly groups: readonly TopicCreationGroup[];
  /** The `default` group: the fallback when no listed group matches. */
  readonly defaultGroup: TopicCreationGroup;
  /** Things that are accepted but probably not meant, e.g. `default` listed in `topic.creation.groups`. */
  readonly warnings: readonly string[];
  /** The settings for `topic`: those of the first listed group that matches it, else the default group's. */
  settingsFor(topic: string): NewTopicSettings;
}

/**
 * Parses a source connector's KIP-158 topic creation settings, as Kafka Connect does:
 *
 * - Used only when some key starts with `topic.creation.`; returns null otherwise.
 * - `topic.creation.default.replication.factor` and `topic.creation.default.partitions` are then
 *   required: -1 (broker default) or at least 1.
 * - `topic.creation.groups` lists group aliases (comma-separated, no duplicates; `default` is
 *   implicit and ignored there with a warning). Each group has `include` / `exclude` regex
 *   lists (comma-separated; a topic must match one regex in full; exclusion wins), and
 *   `replication.factor` / `partitions` that fall back to the default group's.
 * - Any other `topic.creation.<group>.<name>` key is passed through as topic config `<name>`
 *   for that group only (the default group's are not inherited by other groups), except a near
 *   miss of a group setting (`inlcude`, `partitons`): that is an error with "did you mean".
 * - `topic.creation.default.include` / `.exclude` are ignored with a warning, as Kafka Connect
 *   ignores them: the default group takes every topic no listed group takes.
 *
 * Where Kafka Connect drops a key silently or answers with a misleading error, this refuses it
 * naming the key: the keys of a group not listed in `topic.creation.groups`, a
 * `topic.creation.<x>` key without a group; `topic.creation.enable` (a worker setting) is a warning.
 *
 * Regexes are JavaScript regexes used for a full match (Java's `Pattern.matches`); the common
 * Java syntax means the same in both.
 *
 * @throws ConfigError naming every bad key, its value and what is accepted.
 *
 * @example
 * ```ts
 * const settings = topicCreationSettings({
 *   'topic.creation.default.replication.factor': '-1',
 *   'topic.creation.default.partitions': '1',
 *   'topic.creation.groups': 'compacted',
 *   'topic.creation.compacted.include': 'state-.*',
 *   'topic.creation.compacted.cleanup.policy': 'compact',
 * });
 * settings?.settingsFor('state-users'); // { group: 'compacted', partitions: 1, replicationFactor: -1, configs: { 'cleanup.policy': 'compact' } }
 * ```
 */
export function topicCreationSettings(connectorConfig: Readonly<Record<string, string>>): TopicCreationSettings | null {
  const check = checkTopicCreationSettings(connectorConfig);
  if (check.problems.length > 0)
    throw new ConfigError(
      'topic creation settings (topic.creation.*)',
      check.problems.map((p) => p.message),
    );
  return check.settings;
}

/** What {@link checkTopicCreationSettings} finds. */
export interface TopicCreationCheck {
  /** The parsed settings; null when no `topic.creation.*` key is present, there are problems, or topic creation is off. */
  readonly settings: TopicCreationSettings | null;
  /** Mistakes, each naming its key: the connector must not start with them. */
  readonly problems: readonly ConfigProblem[];
  /** Settings that are accepted but have no effect (the same texts as {@link TopicCreationSettings.warnings}). */
  readonly warnings: readonly ConfigProblem[];
}

/** Options of {@link checkTopicCreationSettings}. */
export interface TopicCreationCheckOptions {
  /**
   * The worker's `topic.creation.enable` (default true). When false, the `topic.creation.*`
   * keys are not checked (Kafka Connect ignores them then too) but come back as one warning
   * that they are ignored; `topic.creation.enable` in the connector config is a warning either way.
   */
  readonly workerEnabled?: boolean;
}

/**
 * Checks a source connector's `topic.creation.*` settings without throwing, for validating a
 * connector config when it is created (whatever the sender): the problems and warnings of
 * {@link topicCreationSettings}, each with the key it is about.
 *
 * @example
 * ```ts
 * const check = checkTopicCreationSettings({ 'topic.creation.default.partitons': '3' });
 * check.problems[0]?.key; // 'topic.creation.default.partitons'
 * ```
 */
export function checkTopicCreationSettings(
  connectorConfig: Readonly<Record<string, unknown>>,
  options: TopicCreationCheckOptions = {},
): TopicCreationCheck {
  const keys = Object.keys(connectorConfig).filter((k) => k.startsWith(PREFIX));
  if (keys.length === 0) return { settings: null, problems: [], warnings: [] };

  const problems: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  const get = (key: string): string | undefined => {
    const v = connectorConfig[key];
    return v === undefined || v === null ? undefined : String(v);
  };

  // Kafka Connect ignores it beside the default group's settings (many published connector
  // configs carry it), so it is not refused; but =false here would not turn anything off.
  if (get(ENABLE_KEY) !== undefined)
    warnings.push({
      key: ENABLE_KEY,
      message: `${ENABLE_KEY} is a worker setting, ignored in a connector config (as in Kafka Connect): topic creation is on or off for every connector by the worker's ${ENABLE_KEY} (default true), and a connector uses it by setting ${PREFIX}${DEFAULT_GROUP}.replication.factor and ${PREFIX}${DEFAULT_GROUP}.partitions`,
    });
  const settingKeys = keys.filter((k) => k !== ENABLE_KEY);
  if (settingKeys.length === 0) return { settings: null, problems, warnings };
  if (options.workerEnabled === false) {
    warnings.push({
      key: settingKeys[0] as string,
      message: `${PREFIX}* settings (${settingKeys.join(', ')}) are ignored: the worker config sets ${ENABLE_KEY}=false, so topics are not created with them; set ${ENABLE_KEY}=true in the worker config to apply them`,
    });
    return { settings: null, problems, warnings };
  }

  // Groups.
  const aliases: string[] = [];
  const rawGroups = get(GROUPS_KEY);
  if (rawGroups !== undefined) {
    const listed = parseList(rawGroups);
    const seen = new Set<string>();
    for (const alias of listed) {
      if (alias === '') {
        problems.push({
          key: GROUPS_KEY,
          message: `${GROUPS_KEY}='${rawGroups}': empty group alias; expected a comma-separated list of unique names`,
        });
      } else if (seen.has(alias)) {
        problems.push({
          key: GROUPS_KEY,
          message: `${GROUPS_KEY}='${rawGroups}': duplicate alias '${alias}'; expected unique group aliases`,
        });
      } else if (alias === DEFAULT_GROUP) {
        warnings.push({
          key: GROUPS_KEY,
          message: `'${DEFAULT_GROUP}' topic creation group always exists and does not need to be listed in ${GROUPS_KEY}`,
        });
      } else {
        aliases.push(alias);
      }
      seen.add(alias);
    }
  }

  problems.push(...strayKeys(settingKeys, aliases, rawGroups));
  for (const alias of [DEFAULT_GROUP, ...aliases]) problems.push(...settingTypos(settingKeys, `${PREFIX}${alias}.`));
  // As Kafka Connect, which drops them before parsing: the default group is the fallback.
  for (const name of ['include', 'exclude']) {
    const key = `${PREFIX}${DEFAULT_GROUP}.${name}`;
    if (get(key) === undefined) continue;
    warnings.push({
      key,
      message: `${key} is ignored: the '${DEFAULT_GROUP}' topic creation group takes every topic that no group listed in ${GROUPS_KEY} takes, so include and exclude do not apply to it (Kafka Connect ignores them too). To give some topics other settings, list a group in ${GROUPS_KEY} with its own include`,
    });
  }

  // Default group: both settings required.
  const defaultRf = parseCount(get, `${PREFIX}${DEFAULT_GROUP}.replication.factor`, MAX_REPLICATION_FACTOR, problems, true);
  const defaultPartitions = parseCount(get, `${PREFIX}${DEFAULT_GROUP}.partitions`, MAX_PARTITIONS, problems, true);

  const groups: TopicCreationGroup[] = [];
  for (const alias of aliases) {
    const prefix = `${PREFIX}${alias}.`;
    const rf = parseCount(get, `${prefix}replication.factor`, MAX_REPLICATION_FACTOR, problems, false) ?? defaultRf;
    const partitions = parseCount(get, `${prefix}partitions`, MAX_PARTITIONS, problems, false) ?? defaultPartitions;
    const include = parsePatterns(get, `${prefix}include`, problems);
    const exclude = parsePatterns(get, `${prefix}exclude`, problems);
    groups.push(makeGroup(alias, rf ?? -1, partitions ?? -1, otherConfigs(connectorConfig, prefix), include, exclude));
  }

  if (problems.length > 0) return { settings: null, problems, warnings };

  const defaultGroup = makeGroup(
    DEFAULT_GROUP,
    defaultRf ?? -1,
    defaultPartitions ?? -1,
    otherConfigs(connectorConfig, `${PREFIX}${DEFAULT_GROUP}.`),
    null,
    null,
  );
  const settings: TopicCreationSettings = {
    groups,
    defaultGroup,
    warnings: warnings.map((w) => w.message),
    settingsFor(topic: string): NewTopicSettings {
      const group = groups.find((g) => g.matches(topic)) ?? defaultGroup;
      return {
        group: group.group,
        partitions: group.partitions,
        replicationFactor: group.replicationFactor,
        configs: group.configs,
      };
    },
  };
  return { settings, problems, warnings };
}

/**
 * Keys that belong to no group: `topic.creation.<x>` without a setting name, and the keys of a
 * group that is neither `default` nor listed in `topic.creation.groups` (Kafka Connect drops
 * them silently).
 */
function strayKeys(keys: readonly string[], aliases: readonly string[], rawGroups: string | undefined): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const orphans = new Map<string, string[]>();
  const groupPrefixes = [DEFAULT_GROUP, ...aliases].map((a) => `${PREFIX}${a}.`);
  for (const key of keys) {
    if (key === GROUPS_KEY || groupPrefixes.some((p) => key.startsWith(p) && key.length > p.length)) continue;
    const rest = key.slice(PREFIX.length);
    const dot = rest.indexOf('.');
    if (dot <= 0 || dot === rest.length - 1) {
      const meant = probableKey(key, { keys: [GROUPS_KEY], prefixes: [] });
      const hint =
        meant !== undefined
          ? `did you mean "${meant}"?`
          : `expected ${GROUPS_KEY} or ${PREFIX}<group>.<setting>${RESERVED.has(rest) ? ` (e.g. ${PREFIX}${DEFAULT_GROUP}.${rest})` : ''}`;
      problems.push({ key, message: `unknown key "${key}"; ${hint}` });
      continue;
    }
    const alias = rest.slice(0, dot);
    orphans.set(alias, [...(orphans.get(alias) ?? []), key]);
  }
  const listed =
    rawGroups === undefined
      ? `${GROUPS_KEY} is not set`
      : aliases.length === 0
        ? `${GROUPS_KEY} is empty`
        : `${GROUPS_KEY}=${aliases.join(',')}`;
  for (const [alias, orphanKeys] of orphans) {
    const near = probableKey(alias, { keys: aliases, prefixes: [] });
    const hint =
      near !== undefined
        ? `; '${near}' is listed: is one of the two names a typo?`
        : probableKey(alias, { keys: [DEFAULT_GROUP], prefixes: [] }) !== undefined
          ? `; did you mean ${PREFIX}${DEFAULT_GROUP}.*?`
          : '';
    problems.push({
      key: orphanKeys[0] as string,
      message: `${PREFIX}${alias}.* is set but '${alias}' is not listed in ${GROUPS_KEY} (${listed}): add it to ${GROUPS_KEY}, or remove its keys (${orphanKeys.join(', ')})${hint}`,
    });
  }
  return problems;
}

/** Near misses of a group setting (`include`, `partitions`, ...), which would otherwise go to the broker as topic configs. */
function settingTypos(keys: readonly string[], prefix: string): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const key of keys) {
    if (!key.startsWith(prefix)) continue;
    const name = key.slice(prefix.length);
    if (RESERVED.has(name)) continue;
    const meant = probableKey(name, { keys: GROUP_SETTINGS, prefixes: [] });
    if (meant === undefined) continue;
    problems.push({
      key,
      message: `unknown key "${key}"; did you mean "${prefix}${meant}"? (any ${prefix}<name> other than ${GROUP_SETTINGS.join(', ')} is passed to the broker as topic config "<name>")`,
    });
  }
  return problems;
}

function makeGroup(
  name: string,
  replicationFactor: number,
  partitions: number,
  configs: Record<string, string>,
  include: RegExp | null,
  exclude: RegExp | null,
): TopicCreationGroup {
  const isDefault = name === DEFAULT_GROUP && include === null;
  return {
    group: name,
    replicationFactor,
    partitions,
    configs: Object.freeze(configs),
    include,
    exclude,
    matches(topic: string): boolean {
      if (isDefault) return true;
      if (exclude?.test(topic)) return false;
      return include?.test(topic) ?? false;
    },
  };
}

/** Kafka's LIST type: trimmed, split on commas with the white space around them; '' is an empty list. */
function parseList(value: string): string[] {
  const trimmed = value.trim();
  return trimmed === '' ? [] : trimmed.split(/\s*,\s*/);
}

function parseCount(
  get: (key: string) => string | undefined,
  key: string,
  max: number,
  problems: ConfigProblem[],
  required: boolean,
): number | undefined {
  const raw = get(key);
  const accepted = `-1 (the broker's default) or an integer from 1 to ${max}`;
  if (raw === undefined) {
    if (required)
      problems.push({ key, message: `${key} is required when any topic.creation.* setting is present; expected ${accepted}` });
    return undefined;
  }
  const text = raw.trim();
  const n = /^[+-]?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || (n !== -1 && (n < 1 || n > max))) {
    problems.push({ key, message: `${key}='${raw}' is invalid; expected ${accepted}` });
    return undefined;
  }
  return n;
}

/** A list of regexes as one full-match RegExp, as Java's `Pattern.compile(String.join("|", list)).matcher(t).matches()`. */
function parsePatterns(get: (key: string) => string | undefined, key: string, problems: ConfigProblem[]): RegExp | null {
  const raw = get(key) ?? '';
  const list = parseList(raw);
  for (const item of list) {
    try {
      new RegExp(item);
    } catch (e) {
      problems.push({
        key,
        message: `${key}='${raw}': '${item}' is not a valid regular expression (${(e as Error).message}); expected a comma-separated list of regexes`,
      });
      return null;
    }
  }
  // Java joins with '|' and matches the whole name; an empty list compiles to "" and so matches no topic name.
  return new RegExp(`^(?:${list.join('|')})$`);
}

function otherConfigs(config: Readonly<Record<string, unknown>>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.startsWith(prefix)) continue;
    const name = key.slice(prefix.length);
    if (name === '' || RESERVED.has(name)) continue;
    out[name] = String(value);
  }
  return out;
}
