/**
 * A Produce request's body (v3 to v7, uncompressed) written in one pass into one buffer: the bytes
 * kafkajs 2.2.4's `protocol/requests/produce/v3/request.js` writes, without its encoder per
 * record and per header, and without copying every record again at each of the six levels it
 * nests them in (record, batch body, batch, record set, partition, topic). Part of the kafkajs
 * fixes (src/kafka/kafkajs-fixes.ts), which use it for the requests it takes and kafkajs's own
 * module for everything else.
 */

/**
 * Bytes left free before a one-pass body, for the request's framing (size, API key and version,
 * correlation id, client id) to be written there instead of copying the body behind it.
 */
export const FRAME_ROOM = 256;

/** On a body {@link encodeProduceBody} wrote: the whole buffer, the body starting at {@link FRAME_ROOM}. */
const ROOM = Symbol('tributary.frame-room');

/** kafkajs's 64-bit integer, as its `utils/long` makes them (the producer id is one). */
interface LongLike {
  getHighBits(): number;
  getLowBits(): number;
}

/** What {@link encodeProduceBody} needs from kafkajs: its `Long` (for the producer id) and its `Encoder`. */
export interface ProduceEncoderDeps {
  readonly Long: { fromValue(value: unknown): LongLike; isLong(value: unknown): boolean };
  readonly Encoder: new (initialSize?: number) => { buf: Buffer; offset: number };
}

/** The arguments of kafkajs's produce v3 request that reach the body. */
export interface ProduceArgs {
  readonly acks?: unknown;
  readonly timeout?: unknown;
  readonly transactionalId?: unknown;
  readonly producerId?: unknown;
  readonly producerEpoch?: unknown;
  readonly compression?: unknown;
  readonly topicData?: unknown;
}

/** A message as this path takes it: each field read once from kafkajs's message. */
interface PlainMessage {
  readonly key: Buffer | string | null | undefined;
  readonly value: Buffer | string | null | undefined;
  readonly timestamp: number | null | undefined;
  readonly headers: HeaderList;
}

interface PlainPartition {
  readonly partition: number;
  readonly firstSequence: number;
  readonly messages: readonly PlainMessage[];
}

interface PlainTopic {
  readonly topic: string;
  readonly partitions: readonly PlainPartition[];
}

/** A message's headers as kafkajs's record lists them: one entry per value. */
type HeaderList = ReadonlyArray<readonly [string, Buffer | string]>;
const NO_HEADERS: HeaderList = [];

const INT16_MIN = -0x8000;
const INT16_MAX = 0x7fff;
const INT32_MIN = -0x80000000;
const INT32_MAX = 0x7fffffff;
// Timestamps this path takes: integers of 13 digits (every millisecond time from 2001 to 2286),
// whose numeric order is the string order kafkajs sorts by, and whose differences fit exactly.
const TIMESTAMP_MIN = 1e12;
const TIMESTAMP_MAX = 1e13;
// The record batch header from its base offset to its first record: base offset 8, length 4,
// leader epoch 4, magic 1, crc 4, attributes 2, last offset delta 4, first timestamp 8, max
// timestamp 8, producer id 8, producer epoch 2, first sequence 4, record count 4.
const BATCH_HEADER = 61;
// Where the checksummed part (attributes onwards) starts in a batch, and where the crc sits.
const CRC_AT = 17;
const CHECKSUMMED_FROM = 21;
const MAGIC = 2;
const TRANSACTIONAL = 16;

const isInt = (v: unknown, min: number, max: number): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;

const isBytes = (v: unknown): v is Buffer | string | null | undefined =>
  v === null || v === undefined || typeof v === 'string' || Buffer.isBuffer(v);

/** A header value kafkajs encodes as this path does: a Buffer or a string. */
const isHeaderValue = (v: unknown): v is Buffer | string => typeof v === 'string' || Buffer.isBuffer(v);

/**
 * `m` as this path takes it, every field read once (a getter giving another value on a second
 * read cannot make the sizes and the bytes disagree), or undefined when its encoding is not one
 * this path matches byte for byte. Headers are listed as kafkajs's record lists them: one entry
 * per value, an array's elements in order, holes skipped (its flatMap).
 */
function plainMessage(m: unknown): PlainMessage | undefined {
  if (typeof m !== 'object' || m === null) return undefined;
  const { key, value, timestamp, headers } = m as Record<string, unknown>;
  if (!isBytes(key) || !isBytes(value)) return undefined;
  if (timestamp !== undefined && timestamp !== null && !isInt(timestamp, TIMESTAMP_MIN, TIMESTAMP_MAX - 1)) return undefined;
  if (headers === undefined) return { key, value, timestamp, headers: NO_HEADERS };
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers) || Buffer.isBuffer(headers)) return undefined;
  const list: Array<readonly [string, Buffer | string]> = [];
  for (const name of Object.keys(headers)) {
    const v = (headers as Record<string, unknown>)[name];
    if (Array.isArray(v)) {
      let ok = true;
      v.forEach((e: unknown) => {
        if (isHeaderValue(e)) list.push([name, e]);
        else ok = false;
      });
      if (!ok) return undefined;
    } else if (isHeaderValue(v)) list.push([name, v]);
    else return undefined;
  }
  return { key, value, timestamp, headers: list };
}

/** `topicData` as this path takes it, every part read once, or undefined (kafkajs's own module then encodes it). */
function plainTopics(topicData: unknown): PlainTopic[] | undefined {
  if (!Array.isArray(topicData)) return undefined;
  const topics: PlainTopic[] = [];
  for (const t of topicData as unknown[]) {
    if (typeof t !== 'object' || t === null) return undefined;
    const { topic, partitions } = t as Record<string, unknown>;
    if (typeof topic !== 'string' || Buffer.byteLength(topic) > INT16_MAX || !Array.isArray(partitions)) return undefined;
    const plain: PlainPartition[] = [];
    for (const p of partitions as unknown[]) {
      if (typeof p !== 'object' || p === null) return undefined;
      const { partition, firstSequence = 0, messages } = p as Record<string, unknown>;
      if (!isInt(partition, INT32_MIN, INT32_MAX) || !isInt(firstSequence, INT32_MIN, INT32_MAX)) return undefined;
      if (!Array.isArray(messages) || messages.length === 0) return undefined;
      const taken: PlainMessage[] = [];
      for (const m of messages as unknown[]) {
        const one = plainMessage(m);
        if (one === undefined) return undefined;
        taken.push(one);
      }
      plain.push({ partition, firstSequence, messages: taken });
    }
    topics.push({ topic, partitions: plain });
  }
  return topics;
}

/** Bytes of an unsigned varint of `z` (a non-negative integer below 2^53). */
function sizeOfUVarint(z: number): number {
  let bytes = 1;
  while (z >= 128) {
    z = Math.floor(z / 128);
    bytes++;
  }
  return bytes;
}

/** Zigzag of an integer below 2^52 in magnitude, exactly (as kafkajs's 32- and 64-bit zigzags give for their ranges). */
const zigzag = (n: number): number => (n >= 0 ? n * 2 : -n * 2 - 1);

/** A varint-prefixed byte string's size: null or undefined is the varint -1 alone. */
function sizeOfVarBytes(v: Buffer | string | null | undefined): number {
  if (v === null || v === undefined) return 1;
  const n = typeof v === 'string' ? Buffer.byteLength(v) : v.length;
  return sizeOfUVarint(zigzag(n)) + n;
}

/** Writes the unsigned varint `z` at `at`; returns the offset after it. */
function writeUVarint(buf: Buffer, at: number, z: number): number {
  while (z >= 128) {
    buf[at++] = (z % 128) | 0x80;
    z = Math.floor(z / 128);
  }
  buf[at++] = z;
  return at;
}

/** Writes a varint-prefixed byte string (null: the varint -1); returns the offset after it. */
function writeVarBytes(buf: Buffer, at: number, v: Buffer | string | null | undefined): number {
  if (v === null || v === undefined) {
    buf[at] = 1; // zigzag(-1)
    return at + 1;
  }
  if (typeof v === 'string') {
    const n = Buffer.byteLength(v);
    at = writeUVarint(buf, at, zigzag(n));
    return at + buf.write(v, at, n, 'utf8');
  }
  at = writeUVarint(buf, at, zigzag(v.length));
  buf.set(v, at);
  return at + v.length;
}

/** Writes `n` (an integer below 2^53 in magnitude) as a big-endian int64; returns the offset after it. */
function writeInt64(buf: Buffer, at: number, n: number): number {
  const high = Math.floor(n / 0x100000000);
  buf.writeInt32BE(high, at);
  buf.writeUInt32BE(n - high * 0x100000000, at + 4);
  return at + 8;
}

/**
 * The body of the Produce request kafkajs 2.2.4's produce v3 request module would encode for
 * `args`, byte for byte, in an `Encoder` holding it; or `undefined` when the request is not one
 * this path takes, for kafkajs's own module to encode: compressed, or any part of it not as
 * Tributary's senders build them (a key, value or header value other than a Buffer or a string,
 * a timestamp other than an integer of 13 digits, an integer field out of range, a partition
 * without messages).
 *
 * @param checksum CRC-32C, as kafkajs's record batch computes it (the fixed one: `crc32c`).
 *
 * @example
 * ```ts
 * import { createRequire } from 'node:module';
 * import { crc32c } from './kafkajs-fixes.js';
 *
 * const require = createRequire(import.meta.url);
 * const body = encodeProduceBody(
 *   { acks: -1, timeout: 30_000, topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [{ value: 'v' }] }] }] },
 *   {
 *     Long: require('kafkajs/src/utils/long'),
 *     Encoder: require('kafkajs/src/protocol/encoder'),
 *   },
 *   crc32c,
 * );
 * // body?.buffer: the request's bytes after its header
 * ```
 */
export function encodeProduceBody(
  args: ProduceArgs,
  deps: ProduceEncoderDeps,
  checksum: (bytes: Uint8Array) => number,
): { buf: Buffer; offset: number } | undefined {
  const { acks, timeout, transactionalId = null, producerEpoch = 0, compression = 0 } = args;
  if (compression !== 0 && compression !== undefined) return undefined;
  if (!isInt(acks, INT16_MIN, INT16_MAX) || !isInt(timeout, INT32_MIN, INT32_MAX)) return undefined;
  if (transactionalId !== null && (typeof transactionalId !== 'string' || Buffer.byteLength(transactionalId) > INT16_MAX)) {
    return undefined;
  }
  if (!isInt(producerEpoch, INT16_MIN, INT16_MAX)) return undefined;
  const producerIdArg = args.producerId === undefined ? -1 : args.producerId;
  // kafkajs's idempotent producer passes the id as decimal text (its decoder's int64 as a string).
  const isLong = typeof producerIdArg === 'object' && producerIdArg !== null && deps.Long.isLong(producerIdArg);
  const isText = typeof producerIdArg === 'string' && /^-?[0-9]{1,18}$/.test(producerIdArg);
  if (!isLong && !isText && !isInt(producerIdArg, -(2 ** 53) + 1, 2 ** 53 - 1)) return undefined;
  const topics = plainTopics(args.topicData);
  if (topics === undefined) return undefined;
  const producerId = deps.Long.fromValue(producerIdArg);
  const transactional = transactionalId !== null && transactionalId !== '';

  // First pass: every size, and what the second pass needs per partition.
  const batches: Array<{ now: number; first: number; max: number; recordSizes: number[] }> = [];
  let size = (transactionalId === null ? 2 : 2 + Buffer.byteLength(transactionalId)) + 2 + 4 + 4;
  for (const { topic, partitions } of topics) {
    size += 2 + Buffer.byteLength(topic) + 4;
    for (const { messages } of partitions) {
      // As kafkajs: the time of a record without one, read once per partition.
      const dateNow = Date.now();
      // A clock kafkajs would read as this path does (a mocked one may not be).
      if (!isInt(dateNow, TIMESTAMP_MIN, TIMESTAMP_MAX - 1)) return undefined;
      let first = Number.POSITIVE_INFINITY;
      let max = Number.NEGATIVE_INFINITY;
      for (const m of messages) {
        const t = m.timestamp;
        if (t !== undefined && t !== null) {
          if (t < first) first = t;
          if (t > max) max = t;
        }
      }
      if (first === Number.POSITIVE_INFINITY) first = max = dateNow;
      const recordSizes: number[] = [];
      let records = 0;
      for (let i = 0; i < messages.length; i++) {
        const m = messages[i] as PlainMessage;
        const list = m.headers;
        let body =
          1 +
          sizeOfUVarint(zigzag((m.timestamp || dateNow) - first)) +
          sizeOfUVarint(zigzag(i)) +
          sizeOfVarBytes(m.key) +
          sizeOfVarBytes(m.value) +
          sizeOfUVarint(zigzag(list.length));
        for (const [name, v] of list) body += sizeOfVarBytes(name) + sizeOfVarBytes(v);
        // kafkajs writes a record's lengths as 32-bit varints: a record of a gigabyte is its to refuse.
        if (body >= 2 ** 30) return undefined;
        recordSizes.push(body);
        records += sizeOfUVarint(zigzag(body)) + body;
      }
      batches.push({ now: dateNow, first, max, recordSizes });
      // partition, record set size, then the batch.
      size += 4 + 4 + BATCH_HEADER + records;
    }
  }
  // kafkajs's encoders cannot grow to 2^30 bytes: a request that large is its to refuse.
  if (size + FRAME_ROOM >= 2 ** 30) return undefined;

  // Second pass: the bytes, after room for the framing.
  const whole = Buffer.allocUnsafe(FRAME_ROOM + size);
  const buf = whole.subarray(FRAME_ROOM);
  let at = 0;
  if (transactionalId === null) at = buf.writeInt16BE(-1, at);
  else {
    const n = Buffer.byteLength(transactionalId);
    at = buf.writeInt16BE(n, at);
    at += buf.write(transactionalId, at, n, 'utf8');
  }
  at = buf.writeInt16BE(acks, at);
  at = buf.writeInt32BE(timeout, at);
  at = buf.writeInt32BE(topics.length, at);
  let b = 0;
  for (const { topic, partitions } of topics) {
    const n = Buffer.byteLength(topic);
    at = buf.writeInt16BE(n, at);
    at += buf.write(topic, at, n, 'utf8');
    at = buf.writeInt32BE(partitions.length, at);
    for (const { partition, firstSequence, messages } of partitions) {
      const { now, first, max, recordSizes } = batches[b++] as (typeof batches)[number];
      at = buf.writeInt32BE(partition, at);
      const setSizeAt = at;
      at += 4;
      const batchAt = at;
      at = writeInt64(buf, at, 0); // base offset
      at += 4; // batch length, below
      at = buf.writeInt32BE(0, at); // partition leader epoch
      at = buf.writeInt8(MAGIC, at);
      at += 4; // crc, below
      at = buf.writeInt16BE(transactional ? TRANSACTIONAL : 0, at);
      at = buf.writeInt32BE(messages.length - 1, at);
      at = writeInt64(buf, at, first);
      at = writeInt64(buf, at, max);
      at = buf.writeInt32BE(producerId.getHighBits(), at);
      at = buf.writeInt32BE(producerId.getLowBits(), at);
      at = buf.writeInt16BE(producerEpoch, at);
      at = buf.writeInt32BE(firstSequence, at);
      at = buf.writeInt32BE(messages.length, at);
      for (let i = 0; i < messages.length; i++) {
        const m = messages[i] as PlainMessage;
        const list = m.headers;
        at = writeUVarint(buf, at, zigzag(recordSizes[i] as number));
        buf[at++] = 0; // attributes
        at = writeUVarint(buf, at, zigzag((m.timestamp || now) - first));
        at = writeUVarint(buf, at, zigzag(i));
        at = writeVarBytes(buf, at, m.key);
        at = writeVarBytes(buf, at, m.value);
        at = writeUVarint(buf, at, zigzag(list.length));
        for (const [name, v] of list) {
          at = writeVarBytes(buf, at, name);
          at = writeVarBytes(buf, at, v);
        }
      }
      buf.writeInt32BE(at - batchAt, setSizeAt);
      buf.writeInt32BE(at - batchAt - 12, batchAt + 8);
      buf.writeUInt32BE(checksum(buf.subarray(batchAt + CHECKSUMMED_FROM, at)), batchAt + CRC_AT);
    }
  }
  if (at !== size) throw new Error(`Produce request encoder: wrote ${at} bytes, computed ${size}`);
  // kafkajs's Encoder over the body (what kafkajs's framing and anything else expects), which
  // also carries the whole buffer for frameRequest.
  const encoder = new deps.Encoder(0) as { buf: Buffer; offset: number; [ROOM]?: Buffer };
  encoder.buf = buf;
  encoder.offset = at;
  encoder[ROOM] = whole;
  return encoder;
}

/** What kafkajs's connection hands `protocol/request.js` for each request. */
export interface FrameArgs {
  readonly correlationId?: unknown;
  readonly clientId?: unknown;
  readonly request: { readonly apiKey?: unknown; readonly apiVersion?: unknown; encode(): Promise<unknown> };
}

/**
 * kafkajs's `protocol/request.js`: a request encoded and framed (its size, API key and version,
 * correlation id and client id before its body). A body {@link encodeProduceBody} wrote gets
 * its framing written into the room left before it, so the body is not copied; any other body,
 * and any field out of its range, goes to `kafkajsFrame` (kafkajs's own module, which copies).
 * Either way the bytes are kafkajs's. `request.encode()` runs once.
 */
export async function frameRequest(
  args: FrameArgs,
  kafkajsFrame: (args: FrameArgs) => Promise<unknown>,
  Encoder: ProduceEncoderDeps['Encoder'],
): Promise<unknown> {
  const { correlationId, clientId, request } = args;
  const { apiKey, apiVersion } = request;
  const payload = (await request.encode()) as { buf?: unknown; offset?: unknown; [ROOM]?: Buffer } | null | undefined;
  const whole = payload?.[ROOM];
  if (
    whole !== undefined &&
    typeof clientId === 'string' &&
    isInt(apiKey, INT16_MIN, INT16_MAX) &&
    isInt(apiVersion, INT16_MIN, INT16_MAX) &&
    isInt(correlationId, INT32_MIN, INT32_MAX) &&
    payload?.buf instanceof Buffer &&
    payload.buf.buffer === whole.buffer &&
    payload.buf.byteOffset === whole.byteOffset + FRAME_ROOM &&
    typeof payload.offset === 'number'
  ) {
    const idBytes = Buffer.byteLength(clientId);
    const header = 4 + 2 + 2 + 4 + 2 + idBytes;
    if (header <= FRAME_ROOM && idBytes <= INT16_MAX) {
      const start = FRAME_ROOM - header;
      let at = whole.writeInt32BE(header - 4 + payload.offset, start);
      at = whole.writeInt16BE(apiKey, at);
      at = whole.writeInt16BE(apiVersion, at);
      at = whole.writeInt32BE(correlationId, at);
      at = whole.writeInt16BE(idBytes, at);
      whole.write(clientId, at, idBytes, 'utf8');
      const framed = new Encoder(0);
      framed.buf = whole.subarray(start, FRAME_ROOM + payload.offset);
      framed.offset = header + payload.offset;
      return framed;
    }
  }
  return kafkajsFrame({ correlationId, clientId, request: { apiKey, apiVersion, encode: async () => payload } });
}
