import { describe, expect, it } from 'vitest';
import { ConfigError, isTributaryError } from '../../src/api/errors.js';
import { topicCreationSettings } from '../../src/kafka/topic-creation-settings.js';

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

  it('ignores include/exclude of the default group', () => {
    const s = topicCreationSettings({
      ...BASE,
      'topic.creation.default.include': 'only-this',
      'topic.creation.default.exclude': '.*',
    });
    expect(s?.settingsFor('x')).toEqual({ group: 'default', partitions: 6, replicationFactor: 3, configs: {} });
  });

  it("passes a group's other keys through as topic configs, without inheriting the default group's", () => {
    const s = topicCreationSettings({
      ...BASE,
      'topic.creation.default.retention.ms': '1000',
      'topic.creation.groups': 'g',
      'topic.creation.g.include': 'g-.*',
      'topic.creation.g.min.insync.replicas': '2',
      'topic.creation.g.cleanup.policy': 'compact,delete',
      'topic.creation.unlisted.partitions': 'not even a number',
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
});
