import type { Logger } from '../api/logger.js';
import { logLevel } from './kafkajs-fixes.js';

/** One kafkajs log entry, as its `logCreator` receives it. */
export interface KafkajsLogEntry {
  readonly level: number;
  readonly namespace?: string;
  readonly log: { readonly message: string } & Readonly<Record<string, unknown>>;
}

/**
 * The messages of Kafka errors that kafkajs retries by itself (kafkajs's `retriable` protocol
 * errors that a healthy cluster answers while it starts or moves leaders): logged at debug.
 */
const RETRIABLE_MESSAGES = [
  'This server does not host this topic-partition',
  'There is no leader for this topic-partition',
  'This server is not the leader for that topic-partition',
  'The request timed out',
  'The replica is not available',
  'The server disconnected before a response was received',
  "The coordinator is loading and hence can't process requests",
  'The group coordinator is not available',
  'The coordinator is not available',
  'This is not the correct coordinator',
  'Messages are rejected since there are fewer in-sync replicas than required',
  'Messages are written to the log, but to fewer in-sync replicas than required',
  'This is not the correct controller for this cluster',
  'The leader epoch in the request is older than the epoch on the broker',
  'The leader epoch in the request is newer than the epoch on the broker',
  'The leader high watermark has not caught up',
  'The preferred leader was not available',
  'Eligible topic partition leaders are not available',
  'Leader election not needed',
  'The fetch session ID was not found',
  'The fetch session epoch is invalid',
  'There are unstable offsets that need to be cleared',
  'The producer attempted to update a transaction while another concurrent operation',
  // Group membership (distributed mode): the worker group answers each of these itself and logs what it does.
  'The group is rebalancing, so a rejoin is needed',
  'The coordinator is not aware of this member',
  'Specified group generation id is not valid',
  // A cluster topic or heartbeat topic created by another worker first: the creator checks it instead.
  'Topic with this name already exists',
];

/** Messages of a broker that cannot be reached at all. */
const UNREACHABLE =
  /Connection (error|timeout)|Failed to connect to (seed )?broker|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH/;

/** Options of {@link kafkajsLogCreator}. */
export interface KafkajsLogOptions {
  /** How long the same "cannot connect" condition stays at debug after its one warning, in ms; default 60 s. */
  readonly repeatAfterMs?: number;
  readonly now?: () => number;
}

/**
 * A kafkajs `logCreator` that keeps kafkajs readable: the retriable conditions a healthy start
 * goes through (not leader, coordinator loading or not available, ...) go to debug; a broker
 * that cannot be reached gives one clear warning (`cannot connect to Kafka: connect ECONNREFUSED
 * 127.0.0.1:1; kafkajs keeps retrying`) and its retries go to debug, until the same
 * condition comes back after `repeatAfterMs`; everything else keeps its level (its stack, if any, at debug).

 */
export function kafkajsLogCreator(logger: Logger, options: KafkajsLogOptions = {}): () => (entry: KafkajsLogEntry) => void {
  const repeatAfterMs = options.repeatAfterMs ?? 60_000;
  const now = options.now ?? Date.now;
  const warned = new Map<string, number>();
  return () => (entry) => {
    const { message, stack, timestamp: _t, logger: _l, ...fields } = entry.log;
    if (entry.level > logLevel.WARN) {
      logger.debug(fields, message);
      return;
    }
    const error = typeof fields.error === 'string' ? fields.error : '';
    const text = `${message} ${error}`;
    if (RETRIABLE_MESSAGES.some((m) => text.includes(m))) {
      logger.debug({ ...fields, retriable: true }, message);
      return;
    }
    if (UNREACHABLE.test(text)) {
      const cause = /(connect|getaddrinfo) [A-Z_]+( \S+)?|Connection timeout/.exec(text)?.[0] ?? message;
      const last = warned.get(cause);
      if (last === undefined || now() - last >= repeatAfterMs) {
        warned.set(cause, now());
        logger.warn(
          typeof fields.broker === 'string' ? { broker: fields.broker } : {},
          `cannot connect to Kafka: ${cause}; kafkajs keeps retrying (check bootstrap.servers and that the broker runs)`,
        );
      } else logger.debug(fields, message);
      return;
    }
    if (stack !== undefined) logger.debug({ ...fields, stack }, message);
    if (entry.level <= logLevel.ERROR) logger.error(fields, message);
    else logger.warn(fields, message);
  };
}
