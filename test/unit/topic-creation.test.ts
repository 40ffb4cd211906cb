import { describe, expect, it } from 'vitest';
import { DatagenConnector } from '../../examples/datagen/src/index.js';
import { ConfigError, isTributaryError } from '../../src/api/errors.js';
import { validateConnectorConfig } from '../../src/runtime/connector-config.js';
import { checkTopicCreationSettings, topicCreationSettings } from '../../src/runtime/topic-creation-settings.js';

const BASE = {
  'topic.creation.default.replication.factor': '3',
  'topic.creation.default.partitions': '6',
};

function problemsOf(config: Record<string, string>): readonly string[] {
  try {
    topicCreationSettings(config);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    expect(isTributaryError(e) && e.code).toBe('CONFIG_INVALID');
    return (e as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('topicCreationSettings (KIP-158)', () => {
  it('is null when no topic.creation.* key is present', () => {
    expect(topicCreationSettings({})).toBeNull();
    expect(topicCreationSettings({ 'connector.class': 'x', topic: 'creation' })).toBeNull();
  });

  it('uses the default group for every topic when no group is listed', () => {
    const s = topicCreationSettings({ ...BASE, 'topic.creation.default.compression.type': 'lz4' });
    expect(s).not.toBeNull();
    expect(s?.groups).toEqual([]);
    expect(s?.settingsFor('anything')).toEqual({
      group: 'default',
      partitions: 6,
      replicationFactor: 3,
      configs: { 'compression.type': 'lz4' },
    });
  });

  it('accepts -1 (broker default) for both required settings', () => {
    const s = topicCreationSettings({
      'topic.creation.default.replication.factor': '-1',
      'topic.creation.default.partitions': '-1',
    });
    expect(s?.settingsFor('t')).toMatchObject({ partitions: -1, replicationFactor: -1 });
  });

  it('requires the default replication factor and partitions once any topic.creation.* key is present', () => {
    const problems = problemsOf({ 'topic.creation.groups': 'a' });
    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain('topic.creation.default.replication.factor is required');
    expect(problems[1]).toContain('topic.creation.default.partitions is required');
    expect(problems[0]).toContain('-1');
  });

  it.each([['0'], ['-2'], ['1.5'], ['abc'], [''], ['32768']])(
    'rejects replication factor %j naming the key, value and what is accepted',
    (value) => {
      const problems = problemsOf({ ...BASE, 'topic.creation.default.replication.factor': value });
      expect(problems).toEqual([
        `topic.creation.default.replication.factor='${value}' is invalid; expected -1 (the broker's default) or an integer from 1 to 32767`,
      ]);
    },
  );

  it('rejects bad partitions in a listed group too', () => {
    const problems = problemsOf({
      ...BASE,
      'topic.creation.groups': 'big',
      'topic.creation.big.include': '.*',
      'topic.creation.big.partitions': '0',
    });
    expect(problems).toEqual([
      "topic.creation.big.partitions='0' is invalid; expected -1 (the broker's default) or an integer from 1 to 2147483647",
    ]);
  });

  it('accepts white space around numbers, as Kafka does', () => {
    const s = topicCreationSettings({ ...BASE, 'topic.creation.default.partitions': ' 12 ' });
    expect(s?.settingsFor('t').partitions).toBe(12);
  });

  it('uses the first listed group that matches, falling back to the default', () => {
    const s = topicCreationSettings({
      ...BASE,
      'topic.creation.groups': 'compacted, big',
      'topic.creation.compacted.include': 'state-.*, .*-changelog',
      'topic.creation.compacted.cleanup.policy': 'compact',
      'topic.creation.big.include': 'state-big, events-.*',
      'topic.creation.big.partitions': '24',
      'topic.creation.big.replication.factor': '-1',
    });
    expect(s?.groups.map((g) => g.group)).toEqual(['compacted', 'big']);
    // state-big matches both: the first listed group wins.
    expect(s?.settingsFor('state-big')).toEqual({
      group: 'compacted',
      partitions: 6,
      replicationFactor: 3,
      configs: { 'cleanup.policy': 'compact' },
    });
    expect(s?.settingsFor('users-changelog').group).toBe('compacted');
    expect(s?.settingsFor('events-1')).toEqual({ group: 'big', partitions: 24, replicationFactor: -1, configs: {} });
    expect(s?.settingsFor('other')).toEqual({ group: 'default', partitions: 6, replicationFactor: 3, configs: {} });
  });

  it('matches the whole topic name, not a part of it', () => {
    const s = topicCreationSettings({ ...BASE, 'topic.creation.groups': 'g', 'topic.creation.g.include': 'orders' });
    expect(s?.settingsFor('orders').group).toBe('g');
    expect(s?.settingsFor('orders-v2').group).toBe('default');
    expect(s?.settingsFor('old-orders').group).toBe('default');
  });

  it('lets exclusion win over inclusion', () => {
    const s = topicCreationSettings({
      ...BASE,
      'topic.creation.groups': 'g',
      'topic.creation.g.include': 'db\\..*',
      'topic.creation.g.exclude': 'db\\.internal\\..*, .*\\.tmp',
    });
    const g = s?.groups[0];
    expect(g?.matches('db.users')).toBe(true);
    expect(g?.matches('db.internal.x')).toBe(false);
    expect(g?.matches('db.users.tmp')).toBe(false);
    expect(s?.settingsFor('db.internal.x').group).toBe('default');
  });

  it('a group without include matches no topic', () => {
    const s = topicCreationSettings({ ...BASE, 'topic.creation.groups': 'g', 'topic.creation.g.partitions': '2' });
    expect(s?.groups[0]?.matches('anything')).toBe(false);
    expect(s?.settingsFor('anything').group).toBe('default');
  });

  it('ignores include/exclude of the default group, as Kafka Connect does, with a warning for each', () => {
    const s = topicCreationSettings({
      ...BASE,
      'topic.creation.default.include': 'only-this',
      'topic.creation.default.exclude': '.*',
    });
    expect(s?.settingsFor('x')).toEqual({ group: 'default', partitions: 6, replicationFactor: 3, configs: {} });
    expect(s?.warnings).toEqual(
      ['include', 'exclude'].map(
        (name) =>
          `topic.creation.default.${name} is ignored: the 'default' topic creation group takes every topic that no group listed in topic.creation.groups takes, so include and exclude do not apply to it (Kafka Connect ignores them too). To give some topics other settings, list a group in topic.creation.groups with its own include`,
      ),
    );
  });

  it("passes a group's other keys through as topic configs, without inheriting the default group's", () => {
    const s = topicCreationSettings({
      ...BASE,
      'topic.creation.default.retention.ms': '1000',
      'topic.creation.groups': 'g',
      'topic.creation.g.include': 'g-.*',
      'topic.creation.g.min.insync.replicas': '2',
      'topic.creation.g.cleanup.policy': 'compact,delete',
    });
    expect(s?.settingsFor('g-1').configs).toEqual({ 'min.insync.replicas': '2', 'cleanup.policy': 'compact,delete' });
    expect(s?.settingsFor('x').configs).toEqual({ 'retention.ms': '1000' });
  });

  it('rejects duplicate and empty aliases', () => {
    expect(problemsOf({ ...BASE, 'topic.creation.groups': 'a,b,a' })).toEqual([
      "topic.creation.groups='a,b,a': duplicate alias 'a'; expected unique group aliases",
    ]);
    expect(problemsOf({ ...BASE, 'topic.creation.groups': 'a,,b' })[0]).toContain('empty group alias');
  });

  it("ignores 'default' in topic.creation.groups with a warning", () => {
    const s = topicCreationSettings({ ...BASE, 'topic.creation.groups': 'default' });
    expect(s?.groups).toEqual([]);
    expect(s?.warnings[0]).toContain("'default' topic creation group always exists");
  });

  it('rejects an invalid regex naming the key and the value', () => {
    const problems = problemsOf({ ...BASE, 'topic.creation.groups': 'g', 'topic.creation.g.include': 'ok, (unclosed' });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain("topic.creation.g.include='ok, (unclosed': '(unclosed' is not a valid regular expression");
  });

  it('reports every problem at once', () => {
    const problems = problemsOf({
      'topic.creation.default.replication.factor': 'x',
      'topic.creation.groups': 'g,g',
      'topic.creation.g.include': '[',
    });
    expect(problems.length).toBe(4); // duplicate alias, bad RF, missing partitions, bad regex
    expect(() =>
      topicCreationSettings({ 'topic.creation.default.replication.factor': 'x', 'topic.creation.default.partitions': '1' }),
    ).toThrow(/Invalid topic creation settings \(topic\.creation\.\*\): topic\.creation\.default\.replication\.factor='x'/);
  });

  it('rejects the keys of a group not listed in topic.creation.groups instead of dropping them', () => {
    expect(
      problemsOf({
        ...BASE,
        'topic.creation.groups': 'compactd',
        'topic.creation.compacted.include': 'state-.*',
        'topic.creation.compacted.cleanup.policy': 'compact',
      }),
    ).toEqual([
      "topic.creation.compacted.* is set but 'compacted' is not listed in topic.creation.groups (topic.creation.groups=compactd): add it to topic.creation.groups, or remove its keys (topic.creation.compacted.include, topic.creation.compacted.cleanup.policy); 'compactd' is listed: is one of the two names a typo?",
    ]);
    expect(problemsOf({ ...BASE, 'topic.creation.big.partitions': '12' })).toEqual([
      "topic.creation.big.* is set but 'big' is not listed in topic.creation.groups (topic.creation.groups is not set): add it to topic.creation.groups, or remove its keys (topic.creation.big.partitions)",
    ]);
    expect(problemsOf({ ...BASE, 'topic.creation.groups': '', 'topic.creation.big.partitions': '12' })[0]).toContain(
      '(topic.creation.groups is empty)',
    );
  });

  it('suggests the default group for a misspelt default', () => {
    expect(problemsOf({ ...BASE, 'topic.creation.defualt.cleanup.policy': 'compact' })).toEqual([
      "topic.creation.defualt.* is set but 'defualt' is not listed in topic.creation.groups (topic.creation.groups is not set): add it to topic.creation.groups, or remove its keys (topic.creation.defualt.cleanup.policy); did you mean topic.creation.default.*?",
    ]);
  });

  it.each([
    ['compacted', 'inlcude', 'include'],
    ['compacted', 'partitons', 'partitions'],
    ['compacted', 'exlude', 'exclude'],
    ['compacted', 'replication.factr', 'replication.factor'],
    ['default', 'replicaton.factor', 'replication.factor'],
  ])('rejects topic.creation.%s.%s as a typo of %s instead of passing it to the broker', (group, typo, meant) => {
    const problems = problemsOf({
      ...BASE,
      'topic.creation.groups': 'compacted',
      'topic.creation.compacted.include': 'state-.*',
      [`topic.creation.${group}.${typo}`]: '6',
    });
    expect(problems).toEqual([
      `unknown key "topic.creation.${group}.${typo}"; did you mean "topic.creation.${group}.${meant}"? (any topic.creation.${group}.<name> other than include, exclude, replication.factor, partitions is passed to the broker as topic config "<name>")`,
    ]);
  });

  it('still passes real topic configs through', () => {
    const s = topicCreationSettings({
      ...BASE,
      'topic.creation.groups': 'g',
      'topic.creation.g.include': '.*',
      'topic.creation.g.preallocate': 'true',
      'topic.creation.g.segment.bytes': '1024',
      'topic.creation.g.min.insync.replicas': '2',
    });
    expect(s?.groups[0]?.configs).toEqual({ preallocate: 'true', 'segment.bytes': '1024', 'min.insync.replicas': '2' });
  });

  it('warns that topic.creation.enable in a connector config is the worker setting, ignored there as in Kafka Connect', () => {
    const message =
      "topic.creation.enable is a worker setting, ignored in a connector config (as in Kafka Connect): topic creation is on or off for every connector by the worker's topic.creation.enable (default true), and a connector uses it by setting topic.creation.default.replication.factor and topic.creation.default.partitions";
    // Published connector configs carry it beside the default group's settings: not refused.
    expect(checkTopicCreationSettings({ ...BASE, 'topic.creation.enable': 'true' })).toMatchObject({
      problems: [],
      warnings: [{ key: 'topic.creation.enable', message }],
    });
    expect(checkTopicCreationSettings({ ...BASE, 'topic.creation.enable': 'false' }).warnings.map((w) => w.message)).toEqual([
      message,
    ]);
    expect(checkTopicCreationSettings({ 'topic.creation.enable': 'true' })).toMatchObject({ settings: null, problems: [] });
  });

  it('rejects a topic.creation.<x> key that names no group', () => {
    expect(problemsOf({ ...BASE, 'topic.creation.group': 'a' })).toEqual([
      'unknown key "topic.creation.group"; did you mean "topic.creation.groups"?',
    ]);
    expect(problemsOf({ ...BASE, 'topic.creation.partitions': '3' })).toEqual([
      'unknown key "topic.creation.partitions"; expected topic.creation.groups or topic.creation.<group>.<setting> (e.g. topic.creation.default.partitions)',
    ]);
  });
});

describe('checkTopicCreationSettings', () => {
  it('names the key of each problem', () => {
    const check = checkTopicCreationSettings({
      ...BASE,
      'topic.creation.groups': 'compacted',
      'topic.creation.compacted.inlcude': 'state-.*',
      'topic.creation.other.include': 'x',
      'topic.creation.default.include': 'x',
    });
    expect(check.settings).toBeNull();
    expect(check.problems.map((p) => p.key)).toEqual(['topic.creation.other.include', 'topic.creation.compacted.inlcude']);
    expect(check.warnings.map((w) => w.key)).toEqual(['topic.creation.default.include']);
  });

  it('with topic creation off on the worker, warns that the keys are ignored, and about topic.creation.enable', () => {
    const check = checkTopicCreationSettings(
      { 'topic.creation.default.partitions': 'x', 'topic.creation.enable': 'true' },
      { workerEnabled: false },
    );
    expect(check.problems).toEqual([]);
    expect(check.warnings.map((w) => w.key)).toEqual(['topic.creation.enable', 'topic.creation.default.partitions']);
    expect(check.warnings[1]?.message).toBe(
      'topic.creation.* settings (topic.creation.default.partitions) are ignored: the worker config sets topic.creation.enable=false, so topics are not created with them; set topic.creation.enable=true in the worker config to apply them',
    );
  });
});

describe('topic.creation.* when a connector is created (validateConnectorConfig), whatever the sender', () => {
  const base = { name: 'c', 'connector.class': 'DatagenConnector', topic: 't' };

  it('refuses a mistake without a Kafka producer being made', () => {
    const v = validateConnectorConfig(
      new DatagenConnector(),
      { ...base, ...BASE, 'topic.creation.groups': 'compacted', 'topic.creation.compacted.partitons': '6' },
      {},
    );
    expect(v.ok ? [] : v.problems.map((p) => p.key)).toEqual(['topic.creation.compacted.partitons']);
  });

  it('accepts valid settings and passes the warnings on', () => {
    const v = validateConnectorConfig(new DatagenConnector(), { ...base, ...BASE, 'topic.creation.default.exclude': 'x' }, {});
    expect(v.ok).toBe(true);
    expect(v.warnings.map((w) => w.key)).toEqual(['topic.creation.default.exclude']);
  });

  it("follows the worker's topic.creation.enable", () => {
    const config = { ...base, 'topic.creation.default.partitions': '3' };
    expect(validateConnectorConfig(new DatagenConnector(), config, {}).ok).toBe(false);
    const off = validateConnectorConfig(new DatagenConnector(), config, { 'topic.creation.enable': 'FALSE' });
    expect(off.ok).toBe(true);
    expect(off.warnings.map((w) => w.key)).toEqual(['topic.creation.default.partitions']);
  });

  it('takes a Kafka Connect config with topic.creation.enable beside the default group, with a warning', () => {
    const v = validateConnectorConfig(new DatagenConnector(), { ...base, ...BASE, 'topic.creation.enable': 'true' }, {});
    expect(v.ok).toBe(true);
    expect(v.warnings.map((w) => w.key)).toEqual(['topic.creation.enable']);
  });
});
