/**
 * Vitest globalSetup of the `integration` project: gives every integration test a Kafka broker.
 *
 * - `KAFKA_BOOTSTRAP_SERVERS` set: that cluster is used as is (nothing is started).
 * - Otherwise a single-node broker is started from Apache Kafka's jars (test/kafka/broker.ts)
 *   and stopped, with its temporary data dir removed, when the run ends.
 *
 * Provides `kafkaBootstrap`, or `kafkaSkipReason` (one line) when no broker could be had, so
 * that Kafka tests skip with that reason instead of failing. With `CI=true` a broker that cannot
 * start fails the run instead: CI must not pass by skipping.
 */
import type { TestProject } from 'vitest/node';
import { type KafkaBroker, startBroker } from '../kafka/broker.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Bootstrap servers of the test broker, absent when none could be started. */
    kafkaBootstrap?: string;
    /** Why there is no broker (one line), when `kafkaBootstrap` is absent. */
    kafkaSkipReason?: string;
  }
}

export default async function setup({ provide }: TestProject): Promise<() => Promise<void>> {
  const external = process.env.KAFKA_BOOTSTRAP_SERVERS?.trim();
  if (external) {
    provide('kafkaBootstrap', external);
    return async () => {};
  }
  let broker: KafkaBroker | undefined;
  try {
    const started = Date.now();
    broker = await startBroker();
    provide('kafkaBootstrap', broker.bootstrapServers);
    console.log(
      `[global-setup] Kafka broker ${broker.bootstrapServers} up in ${Date.now() - started} ms (log ${broker.logFile})`,
    );
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (process.env.CI === 'true') throw e;
    const firstLine = message.split('\n')[0] ?? message;
    console.warn(`[global-setup] No Kafka broker, Kafka tests will be skipped: ${message}`);
    provide('kafkaSkipReason', firstLine);
  }
  return async () => {
    if (broker === undefined) return;
    const stopping = Date.now();
    await broker.destroy();
    console.log(`[global-setup] Kafka broker ${broker.bootstrapServers} stopped in ${Date.now() - stopping} ms`);
  };
}
