import { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { isTributaryError, type TributaryError } from '../../src/api/errors.js';
import { groupErrorKind, groupRetryDelay } from '../../src/kafka/group-error-kind.js';
import { KafkajsGroupClient } from '../../src/kafka/kafkajs-group-client.js';
import { KafkajsWorkerGroup, type KafkajsWorkerGroupOptions } from '../../src/kafka/kafkajs-worker-group.js';

const protocolError = (type: string, extra: object = {}) =>
  Object.assign(new Error(`broker says ${type}`), { name: 'KafkaJSProtocolError', type, ...extra });

function thrown(f: () => unknown): TributaryError {
  try {
    f();
  } catch (e) {
    if (isTributaryError(e)) return e;
    throw e;
  }
  throw new Error('expected a TributaryError');
}

describe('groupErrorKind', () => {
  it('tells a rebalance, a lost membership, a coordinator problem and a fatal refusal apart', () => {
    expect(groupErrorKind(protocolError('REBALANCE_IN_PROGRESS')).kind).toBe('rebalance');
    expect(groupErrorKind(protocolError('ILLEGAL_GENERATION'))).toMatchObject({ kind: 'lost', resetMemberId: false });
    expect(groupErrorKind(protocolError('UNKNOWN_MEMBER_ID'))).toMatchObject({ kind: 'lost', resetMemberId: true });
    expect(groupErrorKind(protocolError('FENCED_INSTANCE_ID'))).toMatchObject({ kind: 'lost', resetMemberId: true });
    expect(groupErrorKind(protocolError('NOT_COORDINATOR_FOR_GROUP')).kind).toBe('coordinator');
    expect(groupErrorKind(protocolError('GROUP_COORDINATOR_NOT_AVAILABLE')).kind).toBe('coordinator');
    expect(groupErrorKind(protocolError('INCONSISTENT_GROUP_PROTOCOL')).kind).toBe('fatal');
    expect(groupErrorKind(protocolError('GROUP_AUTHORIZATION_FAILED')).kind).toBe('fatal');
    expect(groupErrorKind(protocolError('INVALID_SESSION_TIMEOUT')).kind).toBe('fatal');
    expect(groupErrorKind(protocolError('SOMETHING_NEW')).kind).toBe('unknown');
  });

  it('reads the Kafka error type through kafkajs retry wrappers and treats network failures as coordinator problems', () => {
    const wrapped = Object.assign(new Error('retries exceeded'), {
      name: 'KafkaJSNumberOfRetriesExceeded',
      cause: protocolError('GROUP_AUTHORIZATION_FAILED'),
    });
    expect(groupErrorKind(wrapped)).toMatchObject({ kind: 'fatal', type: 'GROUP_AUTHORIZATION_FAILED' });
    const refused = Object.assign(new Error('Connection error'), { name: 'KafkaJSConnectionError' });
    expect(groupErrorKind(refused)).toMatchObject({ kind: 'coordinator', type: 'KafkaJSConnectionError' });
    expect(groupErrorKind(new TypeError('bug')).kind).toBe('unknown');
  });

  it("passes on the member id of KIP-394's MEMBER_ID_REQUIRED", () => {
    const e = Object.assign(new Error('member id required'), { name: 'KafkaJSMemberIdRequired', memberId: 'm-42' });
    expect(groupErrorKind(e)).toMatchObject({ kind: 'member-id-required', memberId: 'm-42' });
  });
});

describe('groupRetryDelay', () => {
  it('doubles from the initial delay up to the cap, within ±20 % jitter', () => {
    const limits = { initialMs: 200, maxMs: 5000 };
    expect([1, 2, 3, 4, 5, 6, 50].map((n) => groupRetryDelay(n, limits, () => 0.5))).toEqual([
      200, 400, 800, 1600, 3200, 5000, 5000,
    ]);
    expect(groupRetryDelay(1, limits, () => 0)).toBe(160);
    expect(groupRetryDelay(1, limits, () => 0.9999)).toBe(240);
  });
});

describe('KafkajsGroupClient', () => {
  it('fails at construction, saying which kafkajs to install, when the private Cluster factory is missing', () => {
    const e = thrown(() => new KafkajsGroupClient({} as Kafka));
    expect(e.code).toBe('KAFKA_CLIENT_UNSUPPORTED');
    expect(e.message).toMatch(/no Symbol\(private:Kafka:createCluster\).*install kafkajs 2\.2\.4/);
  });

  it('fails at construction when the Cluster lacks a method it needs', () => {
    const fake = { [Symbol('private:Kafka:createCluster')]: () => ({ connect() {}, disconnect() {} }) };
    expect(thrown(() => new KafkajsGroupClient(fake as unknown as Kafka)).message).toMatch(/has no findGroupCoordinator\(\)/);
  });

  it('accepts the installed kafkajs 2.2.4', () => {
    expect(() => new KafkajsGroupClient(new Kafka({ brokers: ['127.0.0.1:1'] }))).not.toThrow();
  });
});

describe('KafkajsWorkerGroup options', () => {
  const base: KafkajsWorkerGroupOptions = {
    kafka: new Kafka({ brokers: ['127.0.0.1:1'] }),
    groupId: 'g',
    sessionTimeoutMs: 10_000,
    heartbeatIntervalMs: 3000,
    rebalanceTimeoutMs: 60_000,
    protocolName: 'tributary-1',
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  };

  it('names every bad option and what is accepted', () => {
    const e = thrown(() => new KafkajsWorkerGroup({ ...base, sessionTimeoutMs: -1, groupId: '', protocolName: '' }));
    expect(e.code).toBe('CONFIG_INVALID');
    expect(e.message).toMatch(/sessionTimeoutMs: expected a positive integer \(milliseconds\), got -1/);
    expect(e.message).toMatch(/groupId: expected a non-empty string/);
    expect(e.message).toMatch(/protocolName: expected a non-empty string/);
  });

  it('refuses a heartbeat interval that is not shorter than the session', () => {
    expect(thrown(() => new KafkajsWorkerGroup({ ...base, heartbeatIntervalMs: 10_000 })).message).toMatch(
      /heartbeatIntervalMs: must be less than sessionTimeoutMs \(10000\), got 10000/,
    );
  });

  it('reports no confirmed membership before the first join', () => {
    expect(new KafkajsWorkerGroup(base).lastConfirmedAt()).toBe(0);
  });
});
