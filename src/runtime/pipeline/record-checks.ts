import { TributaryError } from '../../api/errors.js';
import type { HeartbeatRecord, SourceRecord } from '../../api/source-record.js';
import { MAX_TOPIC_LENGTH, topicNameProblem } from '../topic-name.js';

/**
 * The record checks of the pipeline: pure functions that throw a RECORD_INVALID error naming the
 * task, the record's source partition and offset, what is wrong and what is accepted. Each runs
 * once per record (the topic check once per distinct topic), before conversion.
 */

/** A record from poll() or produceHeartbeatRecords(). */
type AnyRecord = SourceRecord<any, any> | HeartbeatRecord<any, any>;

/** The RECORD_INVALID error for a record of task `task` that `what`, saying what is `accepted`. */
export function invalidRecord(task: string, record: AnyRecord, what: string, accepted: string): TributaryError {
  const where = `source partition ${safeJson(record.sourcePartition)}, offset ${safeJson(record.sourceOffset)}`;
  return new TributaryError('RECORD_INVALID', `Task ${task} produced a record that ${what} (${where}): ${accepted}`);
}

/**
 * Fails the record unless Kafka takes its timestamp (a whole number of milliseconds, ≥ 0) and
 * headers (names to a string or a Buffer): a NaN timestamp was written as 1970 or now, a
 * fractional one failed in the client's encoder, a number header as text only after a transform.
 */
export function checkTimestampAndHeaders(
  task: string,
  record: AnyRecord,
  timestamp: unknown,
  headers: unknown,
  after: string,
): void {
  if (timestamp !== undefined && timestamp !== null && !(Number.isSafeInteger(timestamp) && (timestamp as number) >= 0)) {
    throw invalidRecord(
      task,
      record,
      `has timestamp ${timestamp instanceof Date ? `a Date (${safeJson(timestamp)})` : typeof timestamp === 'string' ? JSON.stringify(timestamp) : String(timestamp)}${after}`,
      'it must be a whole number of milliseconds since the epoch, >= 0 (date.getTime()), or absent',
    );
  }
  if (headers === undefined || headers === null) return;
  const proto = typeof headers === 'object' ? Object.getPrototypeOf(headers) : undefined;
  if (proto !== Object.prototype && proto !== null) {
    throw invalidRecord(
      task,
      record,
      `has headers that are ${Array.isArray(headers) ? 'an array' : headers instanceof Map ? 'a Map' : typeof headers === 'object' ? 'an object of a class' : `a ${typeof headers}`}`,
      'headers must be a plain object of header names to string or Buffer values, or absent',
    );
  }
  for (const name in headers as Record<string, unknown>) {
    const v = (headers as Record<string, unknown>)[name];
    if (typeof v !== 'string' && !Buffer.isBuffer(v)) {
      throw invalidRecord(
        task,
        record,
        `has header '${name}' = ${v === undefined ? 'undefined' : typeof v === 'object' && v !== null ? `an object (${safeJson(v)})` : String(v)}`,
        'a header value must be a string or a Buffer (convert numbers with String(n); leave out a header that has no value)',
      );
    }
  }
}

/**
 * Fails a record unless Kafka would accept its topic; each distinct topic is checked once. The
 * caller skips the call when the topic is {@link TopicCheck.last}: most records go where their
 * predecessor went.
 *
 * @example
 * ```ts
 * const record = { sourcePartition: { file: 'a' }, sourceOffset: { line: 1 }, topic: 'orders', value: 'x' };
 * const topics = new TopicCheck();
 * if (record.topic !== topics.last) topics.check(record.topic, 'orders-0', record);
 * ```
 */
export class TopicCheck {
  private readonly valid = new Set<string>();
  /** The topic checked last. */
  last: string | undefined;

  check(topic: string, task: string, record: AnyRecord): void {
    if (!this.valid.has(topic)) {
      const problem = topicNameProblem(topic);
      if (problem !== undefined) {
        const shown = topic.length > 60 ? `${topic.slice(0, 60)}...` : topic;
        throw invalidRecord(
          task,
          record,
          `has the topic '${shown}', which ${problem}`,
          `Kafka topic names are 1 to ${MAX_TOPIC_LENGTH} ASCII letters, digits, '.', '_' or '-', and not '.' or '..'`,
        );
      }
      // A task routing to a topic per entity must not grow this without bound.
      if (this.valid.size >= 10_000) this.valid.clear();
      this.valid.add(topic);
    }
    this.last = topic;
  }
}

/** JSON for a message; never throws. */
export function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}

/** True when both are plain objects with the same own keys in the same order and identical primitive values. */
export function sameFlatObject(a: object, b: object): boolean {
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i] as string;
    if (k !== kb[i]) return false;
    const va = (a as Record<string, unknown>)[k];
    if (va !== null && typeof va === 'object') return false;
    if (va !== (b as Record<string, unknown>)[k]) return false;
  }
  return true;
}
