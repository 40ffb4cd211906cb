/**
 * Helpers for integration tests that need Kafka. The broker comes from the integration
 * project's globalSetup (test/integration/global-setup.ts), which provides its bootstrap
 * servers, or a reason to skip when none could be started.
 *
 * Bouncing the broker: the shared broker lives in the vitest main process and is shared by all
 * test files, so a test must not stop it. A test that needs a broker that goes away and comes
 * back starts its own: {@link startOwnBroker} inside a test, or {@link useOwnBroker} for a
 * suite (same ports and data dir across `stop()`/`start()`/`kill()`; removed afterwards).
 *
 * The types of the provided values (`ProvidedContext`) are declared in global-setup.ts.
 */
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, inject, onTestFinished } from 'vitest';
import { TopicAdmin } from '../../src/kafka/topic-admin.js';
import type { TopicRecord } from '../../src/kafka/topic-reader.js';
import { type KafkaBroker, type StartBrokerOptions, startBroker } from '../kafka/broker.js';
import { readWholeTopic } from './distributed-audit.js';

/** Bootstrap servers of the test broker, or undefined when there is none (see {@link kafkaSkipReason}). */
export function kafkaBootstrap(): string | undefined {
  return inject('kafkaBootstrap');
}

/** Why there is no broker, when {@link kafkaBootstrap} is undefined. */
export function kafkaSkipReason(): string {
  return (
    inject('kafkaSkipReason') ??
    'no Kafka broker was provided: is this the integration project? (integration-no-kafka has none: see NO_KAFKA_FILES in vitest.config.ts)'
  );
}

/** The bootstrap servers; throws with the skip reason if there is no broker. Use inside {@link describeKafka}. */
export function requireKafkaBootstrap(): string {
  const bootstrap = kafkaBootstrap();
  if (bootstrap === undefined) throw new Error(`No Kafka broker: ${kafkaSkipReason()}`);
  return bootstrap;
}

/**
 * `describe` for tests that need Kafka: runs them when a broker is available, otherwise skips
 * them with the reason in the suite name, so the report says why.
 */
export function describeKafka(name: string, fn: () => void): void {
  if (kafkaBootstrap() !== undefined) {
    describe(name, fn);
  } else if (process.env.CI === 'true') {
    // CI always has a broker in the integration project (global-setup.ts fails the run otherwise):
    // none here means the file runs in a project without one, which must not pass by skipping.
    throw new Error(`describeKafka('${name}'): no Kafka broker under CI: ${kafkaSkipReason()}`);
  } else {
    describe.skip(`${name} [skipped: ${kafkaSkipReason()}]`, fn);
  }
}

let topicCounter = 0;

/** A topic name no other test (or earlier run against the same broker) uses: `<prefix>-<time>-<random>-<n>`. */
export function uniqueTopic(prefix = 'test'): string {
  const safe = prefix.replace(/[^a-zA-Z0-9._-]/g, '-').slice(0, 180);
  topicCounter += 1;
  return `${safe}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}-${topicCounter}`;
}

/**
 * A kafkajs client for the test broker (or `bootstrap`). kafkajs's own logging is off unless
 * `KAFKAJS_LOG_LEVEL` (error|warn|info|debug) says otherwise.
 */
export function testKafka(bootstrap: string = requireKafkaBootstrap(), clientId = 'tributary-test'): Kafka {
  return new Kafka({ clientId, brokers: bootstrap.split(','), logLevel: kafkajsLogLevel() });
}

/** A record read back by {@link consumeAll}. */
export type ConsumedRecord = TopicRecord;

/**
 * Reads `topic` from the beginning until at least `expectedCount` records are there and
 * everything up to the end offsets at that moment is read (so extra records, e.g. duplicates,
 * present by then are returned too). Records are ordered by partition, then offset.
 * Rejects after `timeoutMs` saying how many records it got.
 */
export async function consumeAll(
  topic: string,
  expectedCount: number,
  timeoutMs = 30_000,
  kafka: Kafka = testKafka(),
): Promise<ConsumedRecord[]> {
  return readWholeTopic(kafka, topic, expectedCount, timeoutMs);
}

/**
 * Starts a broker of the calling test's own (fresh data dir, free ports) for a test that stops,
 * kills or restarts it. Call it inside a test: the broker is destroyed when that test finishes.
 * For a broker shared by a whole suite use {@link useOwnBroker}. Default heap 384 MiB, as it runs
 * next to the shared broker on a small machine.
 */
export async function startOwnBroker(opts: StartBrokerOptions = {}): Promise<KafkaBroker> {
  const broker = await startBroker({ heapMb: 384, ...opts });
  onTestFinished(async () => {
    await broker.destroy();
  });
  return broker;
}

/**
 * Call in a `describe` body: starts a broker of the suite's own before its tests and destroys
 * it after them. Returns a getter for the broker (valid once the suite's tests run).
 *
 * @example
 * ```ts
 * describeKafka('survives a broker restart', () => {
 *   const broker = useOwnBroker();
 *   it('...', async () => { await broker().stop(); await broker().start(); });
 * });
 * ```
 */
export function useOwnBroker(opts: StartBrokerOptions = {}): () => KafkaBroker {
  let broker: KafkaBroker | undefined;
  beforeAll(async () => {
    broker = await startBroker({ heapMb: 384, ...opts });
  });
  afterAll(async () => {
    await broker?.destroy();
  });
  return () => {
    if (broker === undefined) throw new Error('useOwnBroker(): the broker is only there while the suite runs');
    return broker;
  };
}

function kafkajsLogLevel(): logLevel {
  switch ((process.env.KAFKAJS_LOG_LEVEL ?? '').toLowerCase()) {
    case 'error':
      return logLevel.ERROR;
    case 'warn':
      return logLevel.WARN;
    case 'info':
      return logLevel.INFO;
    case 'debug':
      return logLevel.DEBUG;
    default:
      return logLevel.NOTHING;
  }
}

/** Creates `topics` on the test broker with `partitions` partitions each (those that exist are kept). */
export async function createTopics(topics: string[], partitions: number): Promise<void> {
  const admin = new TopicAdmin(testKafka());
  try {
    await admin.ensureTopics(topics, { partitions });
  } finally {
    await admin.close();
  }
}
