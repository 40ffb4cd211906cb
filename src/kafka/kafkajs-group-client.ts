/**
 * The one place that reaches into kafkajs's internals: its private Cluster factory and the
 * group-protocol requests of its Broker class (JoinGroup, SyncGroup, Heartbeat, LeaveGroup).
 *
 * kafkajs's consumer drops an assignment's userData and cannot rejoin on demand, so distributed
 * mode speaks the group protocol itself, through the same Cluster (brokers, TLS, SASL, socket
 * factory) every other kafkajs client of the `Kafka` instance builds. kafkajs is pinned at 2.2.4
 * and no longer released, so these internals do not move; still, everything used is checked
 * here, once, and a mismatch fails with a clear {@link TributaryError} instead of a `TypeError`
 * in the middle of a rebalance.
 */

import type { Kafka } from 'kafkajs';
import { TributaryError } from '../api/errors.js';

/** What JoinGroup answers (kafkajs decodes JoinGroup v0–v5 into this shape). */
export interface JoinGroupResult {
  readonly generationId: number;
  readonly groupProtocol: string;
  readonly leaderId: string;
  readonly memberId: string;
  readonly members: ReadonlyArray<{ readonly memberId: string; readonly memberMetadata: Buffer }>;
}

/** The group coordinator of one group, as kafkajs's Broker speaks to it. */
export interface GroupCoordinatorBroker {
  joinGroup(request: {
    groupId: string;
    sessionTimeout: number;
    rebalanceTimeout: number;
    memberId: string;
    protocolType: string;
    groupProtocols: Array<{ name: string; metadata: Buffer }>;
  }): Promise<JoinGroupResult>;
  syncGroup(request: {
    groupId: string;
    generationId: number;
    memberId: string;
    groupAssignment: Array<{ memberId: string; memberAssignment: Buffer }>;
  }): Promise<{ memberAssignment: Buffer }>;
  heartbeat(request: { groupId: string; groupGenerationId: number; memberId: string }): Promise<unknown>;
  leaveGroup(request: { groupId: string; memberId: string }): Promise<unknown>;
}

interface KafkajsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  findGroupCoordinator(request: { groupId: string }): Promise<unknown>;
}

const CREATE_CLUSTER = 'private:Kafka:createCluster';
const BROKER_METHODS = ['joinGroup', 'syncGroup', 'heartbeat', 'leaveGroup'] as const;

function internalsError(what: string): TributaryError {
  return new TributaryError(
    'KAFKA_CLIENT_UNSUPPORTED',
    `The kafkajs client is not the one distributed mode was written for: ${what}. Distributed mode ` +
      "speaks Kafka's group protocol through kafkajs 2.2.4's internal Cluster and Broker classes; " +
      'install kafkajs 2.2.4 (the version in package.json), not another version or a KafkaJS-compatible client.',
  );
}

/**
 * A connection to Kafka for the group protocol, built from a kafkajs `Kafka` instance.
 *
 * @example
 * ```ts
 * import { Kafka } from 'kafkajs';
 * import { KafkajsGroupClient } from './kafkajs-group-client.js';
 *
 * const client = new KafkajsGroupClient(new Kafka({ brokers: ['127.0.0.1:9092'] }));
 * await client.connect();
 * const coordinator = await client.findCoordinator('my-cluster');
 * await coordinator.heartbeat({ groupId: 'my-cluster', groupGenerationId: 1, memberId: 'm-1' });
 * await client.disconnect();
 * ```
 */
export class KafkajsGroupClient {
  private readonly cluster: KafkajsCluster;

  /**
   * Builds the Cluster now, so a kafkajs whose internals differ fails here.
   *
   * @param kafka The application's kafkajs client: its brokers, TLS, SASL and socket factory are used.
   * @throws TributaryError `KAFKA_CLIENT_UNSUPPORTED` when kafkajs's internals are not as expected.
   */
  constructor(kafka: Kafka) {
    const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === CREATE_CLUSTER);
    if (symbol === undefined) throw internalsError(`the Kafka instance has no Symbol(${CREATE_CLUSTER})`);
    const create = (kafka as unknown as Record<symbol, unknown>)[symbol];
    if (typeof create !== 'function') throw internalsError(`Symbol(${CREATE_CLUSTER}) is not a function`);
    const cluster: unknown = create({ metadataMaxAge: 300_000, allowAutoTopicCreation: false, maxInFlightRequests: null });
    for (const method of ['connect', 'disconnect', 'findGroupCoordinator'] as const) {
      if (typeof (cluster as Record<string, unknown> | null)?.[method] !== 'function') {
        throw internalsError(`the Cluster it builds has no ${method}() method`);
      }
    }
    this.cluster = cluster as KafkajsCluster;
  }

  /** Connects to the bootstrap brokers (kafkajs errors as thrown by kafkajs). */
  async connect(): Promise<void> {
    await this.cluster.connect();
  }

  /**
   * Finds the group's coordinator (FindCoordinator, with kafkajs's retries) and returns its Broker.
   *
   * @throws TributaryError `KAFKA_CLIENT_UNSUPPORTED` when the Broker lacks a group request.
   */
  async findCoordinator(groupId: string): Promise<GroupCoordinatorBroker> {
    const broker: unknown = await this.cluster.findGroupCoordinator({ groupId });
    for (const method of BROKER_METHODS) {
      if (typeof (broker as Record<string, unknown> | null)?.[method] !== 'function') {
        throw internalsError(`the coordinator Broker has no ${method}() method`);
      }
    }
    return broker as GroupCoordinatorBroker;
  }

  /** Closes every connection of the Cluster; pending requests fail. */
  async disconnect(): Promise<void> {
    await this.cluster.disconnect();
  }
}
