import { ConfigError } from '../api/errors.js';

const PREFIX = 'topic.creation.';
const GROUPS_KEY = `${PREFIX}groups`;
const DEFAULT_GROUP = 'default';
const RESERVED = new Set(['include', 'exclude', 'replication.factor', 'partitions']);
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
 *   for that group only (the default group's are not inherited by other groups).
 * - `topic.creation.default.include` / `.exclude` are ignored: the default group takes all topics.
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
  const keys = Object.keys(connectorConfig).filter((k) => k.startsWith(PREFIX));
  if (keys.length === 0) return null;

  const problems: string[] = [];
  const warnings: string[] = [];
  const get = (key: string): string | undefined => {
    const v = connectorConfig[key];
    return v === undefined || v === null ? undefined : String(v);
  };

  // Groups.
  const aliases: string[] = [];
  const rawGroups = get(GROUPS_KEY);
  if (rawGroups !== undefined) {
    const listed = parseList(rawGroups);
    const seen = new Set<string>();
    for (const alias of listed) {
      if (alias === '') {
        problems.push(`${GROUPS_KEY}='${rawGroups}': empty group alias; expected a comma-separated list of unique names`);
      } else if (seen.has(alias)) {
        problems.push(`${GROUPS_KEY}='${rawGroups}': duplicate alias '${alias}'; expected unique group aliases`);
      } else if (alias === DEFAULT_GROUP) {
        warnings.push(`'${DEFAULT_GROUP}' topic creation group always exists and does not need to be listed in ${GROUPS_KEY}`);
      } else {
        aliases.push(alias);
      }
      seen.add(alias);
    }
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

  if (problems.length > 0) throw new ConfigError('topic creation settings (topic.creation.*)', problems);

  const defaultGroup = makeGroup(
    DEFAULT_GROUP,
    defaultRf ?? -1,
    defaultPartitions ?? -1,
    otherConfigs(connectorConfig, `${PREFIX}${DEFAULT_GROUP}.`),
    null,
    null,
  );
  return {
    groups,
    defaultGroup,
    warnings,
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
  problems: string[],
  required: boolean,
): number | undefined {
  const raw = get(key);
  const accepted = `-1 (the broker's default) or an integer from 1 to ${max}`;
  if (raw === undefined) {
    if (required) problems.push(`${key} is required when any topic.creation.* setting is present; expected ${accepted}`);
    return undefined;
  }
  const text = raw.trim();
  const n = /^[+-]?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || (n !== -1 && (n < 1 || n > max))) {
    problems.push(`${key}='${raw}' is invalid; expected ${accepted}`);
    return undefined;
  }
  return n;
}

/** A list of regexes as one full-match RegExp, as Java's `Pattern.compile(String.join("|", list)).matcher(t).matches()`. */
function parsePatterns(get: (key: string) => string | undefined, key: string, problems: string[]): RegExp | null {
  const raw = get(key) ?? '';
  const list = parseList(raw);
  for (const item of list) {
    try {
      new RegExp(item);
    } catch (e) {
      problems.push(
        `${key}='${raw}': '${item}' is not a valid regular expression (${(e as Error).message}); expected a comma-separated list of regexes`,
      );
      return null;
    }
  }
  // Java joins with '|' and matches the whole name; an empty list compiles to "" and so matches no topic name.
  return new RegExp(`^(?:${list.join('|')})$`);
}

function otherConfigs(config: Readonly<Record<string, string>>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(config)) {
    if (!key.startsWith(prefix)) continue;
    const name = key.slice(prefix.length);
    if (name === '' || RESERVED.has(name)) continue;
    out[name] = String(value);
  }
  return out;
}
