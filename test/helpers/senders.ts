import { createRequire } from 'node:module';
import { describe } from 'vitest';

/** The senders a worker can use (`sender=` worker config). */
export type SenderKind = 'kafkajs' | 'librdkafka';

function librdkafkaMissing(): string | undefined {
  try {
    createRequire(import.meta.url)('@confluentinc/kafka-javascript');
    return undefined;
  } catch (e) {
    return `@confluentinc/kafka-javascript is not installed (CKJS_LINKING=dynamic npm install --no-save @confluentinc/kafka-javascript): ${(e as Error).message.split('\n')[0]}`;
  }
}

/**
 * Runs `fn` once per sender. The librdkafka sender is an optional peer dependency: without it
 * its suite is skipped with the reason, except with CI=true, where .ci/run installs it and its
 * absence fails the run.
 */
export function describeEachSender(name: string, fn: (sender: SenderKind) => void): void {
  describe(`${name} (sender=kafkajs)`, () => fn('kafkajs'));
  const missing = librdkafkaMissing();
  if (missing && process.env.CI === 'true') throw new Error(`CI=true but ${missing}`);
  if (missing) describe.skip(`${name} (sender=librdkafka) [skipped: ${missing}]`, () => fn('librdkafka'));
  else describe(`${name} (sender=librdkafka)`, () => fn('librdkafka'));
}

/** `describe` for tests of the librdkafka sender only, skipped (with the reason) as {@link describeEachSender} does. */
export function describeLibrdkafka(name: string, fn: () => void): void {
  const missing = librdkafkaMissing();
  if (missing && process.env.CI === 'true') throw new Error(`CI=true but ${missing}`);
  if (missing) describe.skip(`${name} [skipped: ${missing}]`, fn);
  else describe(name, fn);
}
