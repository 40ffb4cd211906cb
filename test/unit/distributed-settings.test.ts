import { describe, expect, it } from 'vitest';
import { resolveDistributedSettings } from '../../src/runtime/distributed/distributed-settings.js';
import {
  decodeAssignment,
  decodeMetadata,
  encodeAssignment,
  encodeMetadata,
} from '../../src/runtime/distributed/member-protocol.js';

const base = {
  'bootstrap.servers': '127.0.0.1:9092',
  'group.id': 'g',
  'config.storage.topic': 'c',
  'offset.storage.topic': 'o',
  'status.storage.topic': 's',
};

describe('distributed settings', () => {
  it('takes Kafka Connect names and defaults', () => {
    expect(resolveDistributedSettings(base, 'worker config w.properties')).toEqual({
      groupId: 'g',
      configTopic: 'c',
      configReplicationFactor: -1,
      statusTopic: 's',
      statusPartitions: 5,
      statusReplicationFactor: -1,
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 3_000,
      rebalanceTimeoutMs: 60_000,
      maxDelayMs: 30_000,
      leaderWaitMs: 60_000,
    });
  });

  it('names every missing required setting at once', () => {
    expect(() => resolveDistributedSettings({}, 'worker config w.properties')).toThrow(
      /w\.properties.*group\.id.*config\.storage\.topic.*status\.storage\.topic.*offset\.storage\.topic.*bootstrap\.servers/s,
    );
  });

  it('refuses shared topics, a heartbeat at or above the session, a file store, and bad numbers', () => {
    const check = (extra: Record<string, string>) => () => resolveDistributedSettings({ ...base, ...extra }, 'w');
    expect(check({ 'status.storage.topic': 'c' })).toThrow(/must be three different topics \(got c, c, o\)/);
    expect(check({ 'heartbeat.interval.ms': '10000' })).toThrow(
      /heartbeat\.interval\.ms=10000 must be below session\.timeout\.ms=10000/,
    );
    expect(check({ 'offset.storage.file.filename': 'x.json' })).toThrow(/not a file; remove it/);
    expect(check({ 'session.timeout.ms': 'ten' })).toThrow(/session\.timeout\.ms/);
    expect(check({ 'group.id': ' ' })).toThrow(/group\.id is empty/);
  });
});

describe('member protocol', () => {
  it('round-trips metadata and assignments', () => {
    const metadata = {
      version: 1 as const,
      workerId: 'h:1',
      url: 'http://h:1',
      configOffset: '12',
      owned: { connectors: ['a'], tasks: [{ connector: 'a', task: 0 }] },
      leaving: false,
      held: [{ workerId: 'h:2', items: { connectors: [], tasks: [{ connector: 'a', task: 1 }] }, until: 5 }],
    };
    expect(decodeMetadata(encodeMetadata(metadata))).toEqual(metadata);
    const assignment = {
      version: 1 as const,
      leaderWorkerId: 'h:1',
      leaderUrl: 'http://h:1',
      configOffset: '12',
      runs: { connectors: ['a'], tasks: [] },
      revoked: { connectors: [], tasks: [{ connector: 'a', task: 0 }] },
      delayMs: 0,
      members: [{ workerId: 'h:1', url: 'http://h:1' }],
      held: [],
    };
    expect(decodeAssignment(encodeAssignment(assignment))).toEqual(assignment);
  });

  it('says what is wrong with bytes of another kind of member', () => {
    expect(() => decodeMetadata(Buffer.from([0, 1, 2]))).toThrow(/not JSON.*another kind in this group\.id/);
    expect(() => decodeMetadata(Buffer.from('{"version":2}'))).toThrow(/does not decode: .*version/);
  });
});
