/**
 * What the kafkajs producer thread and the main thread send each other (see
 * {@link ./kafkajs-thread.ts}): a `sendBatch` call's messages packed into one transferable
 * ArrayBuffer, the partitions the thread's partitioner picked, and errors with the fields
 * Tributary reads off kafkajs errors (`name`, `retriable`, `retryCount`, the `cause` chain).
 */
import { setHeader } from '../runtime/ports.js';

/** The bytes of a kafkajs message field: what the sender hands kafkajs. */
type Bytes = Buffer | null;

/** A message as the sender hands it to kafkajs; `partition` is written back after the call. */
export interface PackedMessage {
  readonly key: Bytes;
  readonly value: Bytes;
  readonly headers?: Readonly<Record<string, Buffer | string>> | undefined;
  partition?: number | undefined;
  readonly timestamp?: number | string | null | undefined;
}

/** One topic's messages, as in kafkajs's `TopicMessages`. */
export interface PackedTopic {
  readonly topic: string;
  readonly messages: readonly PackedMessage[];
}

/** A header value on the thread, as kafkajs encodes it (null: a header without a value). */
type HeaderValue = Buffer | string | null;

/** A message as the thread gives it to kafkajs: views of the transferred buffer. */
export interface UnpackedMessage {
  key?: Buffer | null;
  value: Buffer | null;
  headers?: Record<string, HeaderValue | HeaderValue[]>;
  partition?: number | undefined;
  timestamp?: string | number;
}

/** Main thread → producer thread. */
export type ToThread =
  | { readonly op: 'connect' }
  | {
      readonly op: 'send';
      readonly id: number;
      readonly batch: ArrayBuffer;
      readonly acks: number | undefined;
      readonly timeout: number | undefined;
      readonly compression: number | undefined;
    }
  | { readonly op: 'resume' }
  | { readonly op: 'disconnect' };

/** Producer thread → main thread. */
export type FromThread =
  | { readonly op: 'connected' }
  | { readonly op: 'connect-failed'; readonly error: SerializedError }
  | {
      readonly op: 'sent';
      readonly id: number;
      readonly result: unknown[];
      readonly partitions: Int32Array;
      /** The thread takes no more calls until `resume`: the response lacks some partition's offset. */
      readonly halted: boolean;
    }
  | { readonly op: 'send-failed'; readonly id: number; readonly error: SerializedError; readonly partitions: Int32Array }
  | { readonly op: 'disconnected'; readonly error?: SerializedError | undefined }
  | {
      readonly op: 'log';
      readonly level: number;
      readonly namespace: string;
      readonly label: string;
      readonly log: Record<string, unknown>;
    }
  | { readonly op: 'rejection'; readonly error: SerializedError };

/** An Error's fields that cross the thread boundary. */
export interface SerializedError {
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  /** Own enumerable fields that are strings, numbers or booleans (kafkajs: retriable, retryCount, type, code...). */
  readonly fields: Record<string, string | number | boolean>;
  readonly cause: SerializedError | undefined;
}

const NO_PARTITION = -1;
const NULL_BYTES = -1;
const NO_HEADERS = -1;
/** In a timestamp's length field: a number follows as a float64, not a string. */
const TIMESTAMP_NUMBER = -2;
// A header's form: one value, or an array of values (kafkajs writes one header per element).
const HEADER_ONE = 0;
const HEADER_ARRAY = 1;
// A header value's kind, as kafkajs's encoder tells them apart: null, a Buffer, else String(value).
const VALUE_NULL = 0;
const VALUE_BYTES = 1;
const VALUE_STRING = 2;
// partition i32, key length i32, value length i32, header count i32, timestamp length i32
const MESSAGE_FIXED = 20;

/** A header value's packed size: kind byte, then a length and the bytes unless null. */
function headerValueSize(v: unknown): number {
  if (v === null || v === undefined) return 1;
  return 5 + (Buffer.isBuffer(v) ? v.length : Buffer.byteLength(String(v)));
}

/** The size of `topics` packed, in bytes. */
function packedSize(topics: readonly PackedTopic[]): number {
  let size = 4;
  for (const { topic, messages } of topics) {
    size += 8 + Buffer.byteLength(topic);
    for (const m of messages) {
      size += MESSAGE_FIXED + (m.key === null ? 0 : m.key.length) + (m.value === null ? 0 : m.value.length);
      if (typeof m.timestamp === 'number') size += 8;
      else if (m.timestamp !== undefined && m.timestamp !== null) size += Buffer.byteLength(String(m.timestamp));
      const headers = m.headers as Readonly<Record<string, unknown>> | undefined;
      if (headers !== undefined && headers !== null) {
        for (const name of Object.keys(headers)) {
          const v = headers[name];
          size += 5 + Buffer.byteLength(name);
          if (Array.isArray(v)) {
            size += 4;
            // forEach, as kafkajs's flatMap, skips the holes of a sparse array.
            v.forEach((e: unknown) => {
              size += headerValueSize(e);
            });
          } else {
            size += headerValueSize(v);
          }
        }
      }
    }
  }
  return size;
}

/**
 * Packs a `sendBatch` call's messages into one ArrayBuffer of its own (so that it can be
 * transferred, not copied, to the thread). Header values keep what kafkajs's encoder tells
 * apart: an array is one header per element (holes skipped), a Buffer its bytes, null or
 * undefined a null value (which kafkajs 2.2.4 refuses, failing the batch, as on the main
 * thread), anything else its `String()`. A timestamp keeps its type (kafkajs treats a number 0
 * as absent, a string "0" as 0); a null one is none.
 */
export function packTopics(topics: readonly PackedTopic[]): ArrayBuffer {
  const buffer = Buffer.allocUnsafeSlow(packedSize(topics));
  let at = buffer.writeUInt32LE(topics.length, 0);
  const bytes = (b: Bytes): void => {
    if (b === null) {
      at = buffer.writeInt32LE(NULL_BYTES, at);
      return;
    }
    at = buffer.writeInt32LE(b.length, at);
    buffer.set(b, at);
    at += b.length;
  };
  const text = (s: string): void => {
    const n = buffer.write(s, at + 4);
    buffer.writeInt32LE(n, at);
    at += 4 + n;
  };
  const headerValue = (v: unknown): void => {
    if (v === null || v === undefined) {
      at = buffer.writeUInt8(VALUE_NULL, at);
    } else if (Buffer.isBuffer(v)) {
      at = buffer.writeUInt8(VALUE_BYTES, at);
      bytes(v);
    } else {
      at = buffer.writeUInt8(VALUE_STRING, at);
      text(String(v));
    }
  };
  for (const { topic, messages } of topics) {
    text(topic);
    at = buffer.writeUInt32LE(messages.length, at);
    for (const m of messages) {
      at = buffer.writeInt32LE(m.partition ?? NO_PARTITION, at);
      bytes(m.key);
      bytes(m.value);
      if (m.timestamp === undefined || m.timestamp === null) {
        at = buffer.writeInt32LE(NULL_BYTES, at);
      } else if (typeof m.timestamp === 'number') {
        at = buffer.writeInt32LE(TIMESTAMP_NUMBER, at);
        at = buffer.writeDoubleLE(m.timestamp, at);
      } else {
        text(String(m.timestamp));
      }
      const headers = m.headers as Readonly<Record<string, unknown>> | undefined;
      if (headers === undefined || headers === null) {
        at = buffer.writeInt32LE(NO_HEADERS, at);
        continue;
      }
      const names = Object.keys(headers);
      at = buffer.writeInt32LE(names.length, at);
      for (const name of names) {
        const v = headers[name];
        text(name);
        if (Array.isArray(v)) {
          at = buffer.writeUInt8(HEADER_ARRAY, at);
          const countAt = at;
          at += 4;
          let count = 0;
          v.forEach((e: unknown) => {
            count++;
            headerValue(e);
          });
          buffer.writeUInt32LE(count, countAt);
        } else {
          at = buffer.writeUInt8(HEADER_ONE, at);
          headerValue(v);
        }
      }
    }
  }
  if (at !== buffer.length) throw new Error(`packTopics: wrote ${at} bytes, sized ${buffer.length}`);
  return buffer.buffer as ArrayBuffer;
}

/** The messages of {@link packTopics}, as views of `data` (no copy). */
export function unpackTopics(data: ArrayBuffer): Array<{ topic: string; messages: UnpackedMessage[] }> {
  const buffer = Buffer.from(data);
  let at = 0;
  const int = (): number => {
    const n = buffer.readInt32LE(at);
    at += 4;
    return n;
  };
  const bytes = (): Buffer | null => {
    const n = int();
    if (n === NULL_BYTES) return null;
    const b = buffer.subarray(at, at + n);
    at += n;
    return b;
  };
  const text = (): string => {
    const n = int();
    const s = buffer.toString('utf8', at, at + n);
    at += n;
    return s;
  };
  const count = buffer.readUInt32LE(at);
  at += 4;
  const topics: Array<{ topic: string; messages: UnpackedMessage[] }> = [];
  for (let t = 0; t < count; t++) {
    const topic = text();
    const n = buffer.readUInt32LE(at);
    at += 4;
    const messages: UnpackedMessage[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const partition = int();
      const key = bytes();
      const value = bytes();
      // The sender's two shapes (kafkajs-sender.ts, OutMessage): the lean one unless it needs more.
      // As given: kafkajs treats a number 0 as absent but a string "0" as 0.
      let timestamp: string | number | undefined;
      const stamp = buffer.readInt32LE(at);
      if (stamp === NULL_BYTES) {
        at += 4;
      } else if (stamp === TIMESTAMP_NUMBER) {
        timestamp = buffer.readDoubleLE(at + 4);
        at += 12;
      } else {
        timestamp = text();
      }
      const headerCount = int();
      if (headerCount === NO_HEADERS && timestamp === undefined) {
        // A plain kafkajs program's shape when it can be (kafkajs copies every field of every message),
        // with the partition's field already there for the partitioner to fill in: adding it
        // later would give each message a second backing store.
        const p = partition === NO_PARTITION ? undefined : partition;
        messages[i] = key === null ? { value, partition: p } : { key, value, partition: p };
        continue;
      }
      const message: UnpackedMessage = { key, value };
      if (partition !== NO_PARTITION) message.partition = partition;
      if (timestamp !== undefined) message.timestamp = timestamp;
      if (headerCount !== NO_HEADERS) {
        const headers: Record<string, HeaderValue | HeaderValue[]> = {};
        const headerValue = (): HeaderValue => {
          const kind = buffer.readUInt8(at);
          at += 1;
          if (kind === VALUE_NULL) return null;
          return kind === VALUE_STRING ? text() : (bytes() as Buffer);
        };
        for (let h = 0; h < headerCount; h++) {
          const name = text();
          const form = buffer.readUInt8(at);
          at += 1;
          if (form === HEADER_ARRAY) {
            const n = buffer.readUInt32LE(at);
            at += 4;
            const values: HeaderValue[] = [];
            for (let k = 0; k < n; k++) values.push(headerValue());
            setHeader(headers, name, values);
          } else {
            setHeader(headers, name, headerValue());
          }
        }
        message.headers = headers;
      }
      messages[i] = message;
    }
    topics.push({ topic, messages });
  }
  return topics;
}

/** The partition of every message, in order (-1 where none was picked). */
export function partitionsOf(
  topics: ReadonlyArray<{ readonly messages: readonly { partition?: number | undefined }[] }>,
): Int32Array {
  let n = 0;
  for (const t of topics) n += t.messages.length;
  const out = new Int32Array(n);
  let i = 0;
  for (const t of topics) {
    for (const m of t.messages) out[i++] = m.partition ?? NO_PARTITION;
  }
  return out;
}

/**
 * Writes the partitions the thread's partitioner picked onto the sender's own messages (the
 * retry-stable partitioner's contract: a re-sent message keeps its partition, and the sender
 * reads it for the record's metadata).
 */
export function applyPartitions(topics: readonly PackedTopic[], partitions: Int32Array): void {
  let i = 0;
  for (const t of topics) {
    for (const m of t.messages) {
      const p = partitions[i++] as number;
      if (m.partition === undefined && p !== NO_PARTITION) m.partition = p;
    }
  }
}

/** An error's fields for the other thread; anything not an Error becomes one with its text. */
export function serializeError(e: unknown, depth = 0): SerializedError {
  if (!(e instanceof Error)) {
    return { name: 'Error', message: String(e), stack: undefined, fields: {}, cause: undefined };
  }
  const fields: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(e)) {
    if (k === 'cause' || k === 'name' || k === 'message' || k === 'stack') continue;
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') fields[k] = v;
  }
  const cause = (e as { cause?: unknown }).cause;
  return {
    name: e.name,
    message: e.message,
    stack: e.stack,
    fields,
    cause: cause !== undefined && cause !== e && depth < 8 ? serializeError(cause, depth + 1) : undefined,
  };
}

/** The Error {@link serializeError} described, with the same name, message, stack, fields and causes. */
export function deserializeError(s: SerializedError): Error {
  const e = new Error(s.message, s.cause === undefined ? undefined : { cause: deserializeError(s.cause) });
  e.name = s.name;
  if (s.stack !== undefined) e.stack = s.stack;
  Object.assign(e, s.fields);
  return e;
}
