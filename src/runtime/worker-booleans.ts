import { availableParallelism } from 'node:os';
import { parseConfigBoolean } from '../api/config-def.js';
import { ConfigError } from '../api/errors.js';

/**
 * The worker settings of Kafka Connect's type BOOLEAN that Tributary reads, with their default
 * (Kafka Connect's). Kafka Connect accepts `true` or `false`, case-insensitively, after trimming,
 * and refuses anything else; so does Tributary: `=no` or `=flase` must not leave a feature on.
 */
const WORKER_BOOLEANS = {
  'topic.tracking.enable': true,
  'topic.tracking.allow.reset': true,
  'topic.creation.enable': true,
  // The kafkajs producer on a thread of its own pays only with a second CPU to run it on.
  'sender.thread': availableParallelism() > 1,
} satisfies Record<string, boolean>;

/** A boolean worker setting. */
export type WorkerBooleanKey = keyof typeof WORKER_BOOLEANS;

function problemOf(config: Readonly<Record<string, unknown>>, key: WorkerBooleanKey): string | undefined {
  const raw = config[key];
  if (raw === undefined || parseConfigBoolean(raw) !== undefined) return undefined;
  return `Invalid value ${JSON.stringify(raw) ?? String(raw)} for configuration ${key}: Expected value to be either true or false (case-insensitive; leave it out for the default, ${WORKER_BOOLEANS[key]})`;
}

/**
 * Checks every boolean worker setting; throws one {@link ConfigError} naming each bad key, its
 * value and what is accepted. Run at worker start, so a typo stops the worker there.
 */
export function checkWorkerBooleans(config: Readonly<Record<string, unknown>>): void {
  const problems = (Object.keys(WORKER_BOOLEANS) as WorkerBooleanKey[]).flatMap((key) => problemOf(config, key) ?? []);
  if (problems.length > 0) throw new ConfigError('worker config', problems);
}

/** The value of a boolean worker setting (its default when absent); throws a {@link ConfigError} for a bad value. */
export function workerBoolean(config: Readonly<Record<string, unknown>>, key: WorkerBooleanKey): boolean {
  const problem = problemOf(config, key);
  if (problem !== undefined) throw new ConfigError('worker config', [problem]);
  return parseConfigBoolean(config[key]) ?? WORKER_BOOLEANS[key];
}
