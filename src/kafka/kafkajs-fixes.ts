/**
 * kafkajs as Tributary loads it: kafkajs 2.2.4 with six costs of its producer removed, the same
 * bytes on the wire, and its consumer's read_committed filter made Kafka's (7.). Every module of Tributary that needs kafkajs's values (`Kafka`, `logLevel`,
 * ...) takes them from here, never from 'kafkajs' itself (test/unit/kafkajs-fixes.test.ts checks
 * that), so the fixes are in place before kafkajs first loads, in the main thread and in each
 * producer thread alike.
 *
 * 1. `producer/groupMessagesPerPartition.js` builds each partition's array with
 *    `[...current, message]`, a copy per message: quadratic in a partition's messages per
 *    `send` (half a million element copies and about 4 MB of garbage per 1,000-record batch).
 *    {@link groupMessagesPerPartition} pushes instead: the same arrays, in the same order.
 * 2. `protocol/requests/produce/v3/request.js` (Produce v3 to v7, what every broker since Kafka
 *    0.11 gets) copies each message with a spread before encoding it, and sorts a batch's
 *    timestamps with `Array#sort`'s default comparator, which turns each into a string at every
 *    comparison. The fixed module passes the five fields its `Record` reads, and sorts
 *    timestamps as numbers when they are integers of 13 digits (as numbers or digit strings:
 *    every millisecond time from 2001 to 2286), where that order is the strings' order; any
 *    other timestamps (another length, NaN, text) it sorts as kafkajs does. The bytes are the
 *    same for every message that is a plain object, as every Tributary sender builds them (a
 *    spread copies own enumerable properties only, so a key, value or headers inherited from a
 *    prototype, or not enumerable, would now be encoded where kafkajs dropped them). Beyond
 *    that, kafkajs writes every record into an encoder of its own and copies each record again
 *    at each of the six levels it nests them in;
 *    the fixed module writes an uncompressed request whose every part is as Tributary's senders
 *    build them (Buffer or string keys, values and headers, timestamps of 13 digits) in one pass
 *    into one buffer (`encodeProduceBody`), and leaves any other request to kafkajs's code.
 * 3. `protocol/encoder.js`, which writes every request, starts each encoder (one per record) on
 *    a zero-filled `Buffer.alloc(512)`, a buffer of its own outside the heap that the garbage
 *    collector must track and free; writes each varint through an array and a `Buffer.from` of
 *    it; and computes every varlong (a record's time delta) with 64-bit `Long` arithmetic. The
 *    fixed module takes its buffers with `Buffer.allocUnsafe` (small ones from Node's shared
 *    pool: no zero-fill, no buffer of its own; an encoder only ever hands out the bytes it has
 *    written), writes varints in place, and encodes varlongs of integers below 2^30 in magnitude
 *    as varints, which gives the same bytes. Larger values, and anything not a number, take
 *    kafkajs's own path.
 * 4. `protocol/recordBatch/crc32C/crc32C.js`, the checksum of every record batch, reads one byte
 *    at a time: about a third of a microsecond per 100-byte record, three for a 1 KiB one.
 *    {@link crc32c} computes the same CRC-32C eight bytes at a time (slicing-by-8), about four
 *    times as fast.
 * 5. `protocol/recordBatch/record/v0/index.js` starts each record's encoder at 512 bytes however
 *    small the record, so Node's 8 KiB buffer pool runs out every 16 records. The fixed module
 *    starts it at the record's own size when that is smaller (it computes the size first
 *    anyway); an encoder's size never changes its bytes.
 * 6. `protocol/request.js`, which frames every request (its size, API key and version,
 *    correlation id and client id), copies the whole request twice, each time into a fresh
 *    buffer whose memory the system must first map in. The fixed module writes the framing of a
 *    one-pass Produce body into room left before it (`frameRequest`), no copy, and copies any
 *    other request once.
 * 7. `consumer/filterAbortedMessages.js`, which drops the records of aborted transactions from
 *    what every read_committed consumer gets (the offset, config and status stores' readers),
 *    takes the broker's list of aborted transactions for one ordered by first offset and steps
 *    through it one entry per record; the broker lists them by ABORT marker. When aborted
 *    transactions of two producers overlap in a partition, kafkajs hands out the records of one
 *    of them as committed. {@link filterAbortedMessages} filters as Kafka's Java consumer does
 *    (src/kafka/kafkajs-aborted-filter.ts). This one changes what is read, not only how fast.
 *
 * The first two halve kafkajs's CPU per record (docs/benchmarks.md, sixth pass); the third
 * roughly halves it again (seventh pass); with the last three and the one-pass body, encoding a
 * Produce request costs about a fifth of what it did before them (ninth pass). kafkajs has had
 * no release since 2023. The fixes are made only to kafkajs 2.2.4's own files, checked against
 * their exact text; anything else (another version, a file already changed, kafkajs loaded
 * before this module) leaves that part of kafkajs as it is, and {@link kafkajsFixes} says why:
 * for the first six slower, never different; without the seventh a read_committed read can take
 * records of aborted transactions for committed ones, which {@link KAFKAJS_UNFIXED} says.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type * as Kafkajs from 'kafkajs';
import { filterAbortedMessages } from './kafkajs-aborted-filter.js';
import {
  encodeProduceBody,
  type FrameArgs,
  frameRequest,
  type ProduceArgs,
  type ProduceEncoderDeps,
} from './kafkajs-produce-encoder.js';

/** Marks this module's replacements in the module cache, so a second load of this file finds them. */
const FIXED = Symbol.for('tributary.kafkajs-fix');

/** What became of the fixes in this thread (each thread has its own modules). */
export interface KafkajsFixes {
  /**
   * The fixes in force, in this order when all are: `groupMessagesPerPartition`, `encoder`,
   * `framing`, `crc32C`, `record`, `produce-v3-request`, `filterAbortedMessages`.
   */
  readonly applied: readonly string[];
  /** For each fix not in force, why (kafkajs is then used as it is for that part). */
  readonly notApplied: readonly string[];
}

/** kafkajs 2.2.4's `src/producer/groupMessagesPerPartition.js`, whole. */
const GROUP_SOURCE_2_2_4 = `module.exports = ({ topic, partitionMetadata, messages, partitioner }) => {
  if (partitionMetadata.length === 0) {
    return {}
  }

  return messages.reduce((result, message) => {
    const partition = partitioner({ topic, partitionMetadata, message })
    const current = result[partition] || []
    return Object.assign(result, { [partition]: [...current, message] })
  }, {})
}
`;

/** The two passages of kafkajs 2.2.4's `src/protocol/requests/produce/v3/request.js` that change, and what they become. */
const REQUEST_EDITS: ReadonlyArray<readonly [from: string, to: string]> = [
  [
    `    .filter(timestamp => timestamp != null)
    .sort()
`,
    `    .filter(timestamp => timestamp != null)
  // Tributary (src/kafka/kafkajs-fixes.ts): as numbers where that is the order of kafkajs's
  // sort as strings (integers of 13 digits: every millisecond time from 2001 to 2286), else as kafkajs.
  if (messageTimestamps.every(t => (typeof t === 'number' ? Number.isInteger(t) && t >= 1e12 && t < 1e13 : typeof t === 'string' && /^[1-9][0-9]{12}$/.test(t)))) messageTimestamps.sort((a, b) => a - b)
  else messageTimestamps.sort()
`,
  ],
  [
    `    Record({
      ...message,
      offsetDelta: i,
      timestampDelta: (message.timestamp || dateNow) - firstTimestamp,
    })
`,
    `    Record({
      key: message.key,
      value: message.value,
      headers: message.headers,
      offsetDelta: i,
      timestampDelta: (message.timestamp || dateNow) - firstTimestamp,
    })
`,
  ],
];

/** The passages of kafkajs 2.2.4's `src/protocol/encoder.js` that change, and what they become. */
const ENCODER_EDITS: ReadonlyArray<readonly [from: string, to: string]> = [
  [
    `  static sizeOfVarLong(value) {
    let longValue`,
    `  static sizeOfVarLong(value) {
    // Tributary (src/kafka/kafkajs-fixes.ts): an integer below 2^30 in magnitude zigzags into 31 bits, as a varint.
    if (typeof value === 'number' && value >= -0x40000000 && value < 0x40000000 && Number.isInteger(value)) {
      return Encoder.sizeOfVarInt(value)
    }
    let longValue`,
  ],
  [
    `    this.buf = Buffer.alloc(Encoder.nextPowerOfTwo(initialSize))`,
    `    this.buf = Buffer.allocUnsafe(Encoder.nextPowerOfTwo(initialSize))`,
  ],
  [`      const newBuffer = Buffer.alloc(newLength)`, `      const newBuffer = Buffer.allocUnsafe(newLength)`],
  [
    `  writeUVarInt(value) {
    const byteArray = []
    while ((value & UNSIGNED_INT32_MAX_NUMBER) !== 0) {
      byteArray.push((value & OTHER_BITS) | MOST_SIGNIFICANT_BIT)
      value >>>= 7
    }
    byteArray.push(value & OTHER_BITS)
    this.writeBufferInternal(Buffer.from(byteArray))
    return this
  }`,
    `  writeUVarInt(value) {
    // Tributary (src/kafka/kafkajs-fixes.ts): in place; the loop leaves at most 5 bytes (value >>>= 7 makes it 32-bit).
    this.ensureAvailable(5)
    const buf = this.buf
    let offset = this.offset
    while ((value & UNSIGNED_INT32_MAX_NUMBER) !== 0) {
      buf[offset++] = (value & OTHER_BITS) | MOST_SIGNIFICANT_BIT
      value >>>= 7
    }
    buf[offset++] = value & OTHER_BITS
    this.offset = offset
    return this
  }`,
  ],
  [
    `  writeVarLong(value) {
    const byteArray = []`,
    `  writeVarLong(value) {
    // Tributary (src/kafka/kafkajs-fixes.ts): as sizeOfVarLong, the same bytes as the Long path below.
    if (typeof value === 'number' && value >= -0x40000000 && value < 0x40000000 && Number.isInteger(value)) {
      return this.writeUVarInt(Encoder.encodeZigZag(value))
    }
    const byteArray = []`,
  ],
];

/** The passage of kafkajs 2.2.4's `src/protocol/recordBatch/record/v0/index.js` that changes, and what it becomes. */
const RECORD_EDITS: ReadonlyArray<readonly [from: string, to: string]> = [
  [
    `  return new Encoder()
    .writeVarInt(sizeOfBody)`,
    `  // Tributary (src/kafka/kafkajs-fixes.ts): the record's own size (its length varint takes at most 5 bytes) when below kafkajs's 511.
  return new Encoder(Math.min(sizeOfBody + 5, 511))
    .writeVarInt(sizeOfBody)`,
  ],
];

/** The passage of kafkajs 2.2.4's `src/protocol/request.js` (every request's framing) that changes, and what it becomes. */
const FRAMING_EDITS: ReadonlyArray<readonly [from: string, to: string]> = [
  [
    `  const payload = await encode()
  const requestPayload = new Encoder()
    .writeInt16(apiKey)
    .writeInt16(apiVersion)
    .writeInt32(correlationId)
    .writeString(clientId)
    .writeEncoder(payload)

  return new Encoder().writeInt32(requestPayload.size()).writeEncoder(requestPayload)
`,
    `  const payload = await encode()
  // Tributary (src/kafka/kafkajs-fixes.ts): the size, header and payload written into one encoder
  // sized for them, so the payload is copied once, not twice. An invalid payload or client id
  // fails in writeEncoder or writeString, as before.
  const payloadSize = payload != null && Buffer.isBuffer(payload.buf) ? payload.size() : 0
  const clientIdSize = typeof clientId === 'string' ? Buffer.byteLength(clientId, 'utf8') : 0
  const size = 2 + 2 + 4 + 2 + clientIdSize + payloadSize
  return new Encoder(4 + size)
    .writeInt32(size)
    .writeInt16(apiKey)
    .writeInt16(apiVersion)
    .writeInt32(correlationId)
    .writeString(clientId)
    .writeEncoder(payload)
`,
  ],
];

/** SHA-256 of kafkajs 2.2.4's `src/protocol/recordBatch/crc32C/crc32C.js`, whole (most of it is its table). */
const CRC32C_SHA256_2_2_4 = '1c09c7a44e7a207f2dabb920e6bf9f6b1b3fd9cc023e959a9e91ba83e5b6f61a';

/** SHA-256 of kafkajs 2.2.4's `src/consumer/filterAbortedMessages.js`, whole. */
const FILTER_ABORTED_SHA256_2_2_4 = '54ce50f2a41ee1686da8b73bf8b502c7dd07c9d7cb0a494cdb36a7fc536ced8e';

/**
 * Eight tables of 256: the first is CRC-32C's byte table (the reflected Castagnoli polynomial
 * 0x82f63b78, as kafkajs's own table), table k gives the effect of a byte followed by k zero bytes.
 */
const CRC32C_TABLES: Int32Array = (() => {
  const t = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[n] = c;
  }
  for (let k = 1; k < 8; k++) {
    for (let n = 0; n < 256; n++) {
      const previous = t[(k - 1) * 256 + n] as number;
      t[k * 256 + n] = (previous >>> 8) ^ (t[previous & 0xff] as number);
    }
  }
  return t;
})();

/**
 * The CRC-32C (Castagnoli) checksum of `bytes`, as an unsigned 32-bit integer: what kafkajs
 * 2.2.4's `crc32C` returns for the same bytes, eight bytes per step (slicing-by-8) instead of one.
 *
 * @example
 * ```ts
 * crc32c(Buffer.from('123456789')); // 0xe3069283, CRC-32C's check value
 * ```
 */
export function crc32c(bytes: Uint8Array): number {
  const t = CRC32C_TABLES;
  const n = bytes.length;
  const whole = n - (n & 7);
  let crc = -1;
  let i = 0;
  for (; i < whole; i += 8) {
    crc ^=
      (bytes[i] as number) |
      ((bytes[i + 1] as number) << 8) |
      ((bytes[i + 2] as number) << 16) |
      ((bytes[i + 3] as number) << 24);
    crc =
      (t[1792 + (crc & 0xff)] as number) ^
      (t[1536 + ((crc >>> 8) & 0xff)] as number) ^
      (t[1280 + ((crc >>> 16) & 0xff)] as number) ^
      (t[1024 + (crc >>> 24)] as number) ^
      (t[768 + (bytes[i + 4] as number)] as number) ^
      (t[512 + (bytes[i + 5] as number)] as number) ^
      (t[256 + (bytes[i + 6] as number)] as number) ^
      (t[bytes[i + 7] as number] as number);
  }
  for (; i < n; i++) crc = (t[(crc ^ (bytes[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ -1) >>> 0;
}

/**
 * Produce request bodies encoded in this thread since it loaded kafkajs: in one pass
 * (`encodeProduceBody`), and by kafkajs's own module (compressed requests, and any with a part not
 * as Tributary's senders build it). For tests and diagnostics.
 */
export const produceBodies = { onePass: 0, kafkajs: 0 };

/** What kafkajs's producer hands {@link groupMessagesPerPartition}. */
export interface GroupInput<M> {
  readonly topic: string;
  readonly partitionMetadata: readonly unknown[];
  readonly messages: readonly M[];
  readonly partitioner: (args: { topic: string; partitionMetadata: readonly unknown[]; message: M }) => number;
}

/**
 * kafkajs's grouping of a topic's messages by the partition its partitioner picks, in linear
 * time: an object from partition to that partition's messages in their order, `{}` without
 * partition metadata (kafkajs then refreshes the metadata and tries again).
 *
 * @example
 * ```ts
 * const grouped = groupMessagesPerPartition({
 *   topic: 'orders',
 *   partitionMetadata: [{ partitionId: 0 }, { partitionId: 1 }],
 *   messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }],
 *   partitioner: ({ message }) => (message.value === 'b' ? 1 : 0),
 * });
 * // grouped: { 0: [{ value: 'a' }, { value: 'c' }], 1: [{ value: 'b' }] }
 * ```
 */
export function groupMessagesPerPartition<M>({
  topic,
  partitionMetadata,
  messages,
  partitioner,
}: GroupInput<M>): Record<string, M[]> {
  const result: Record<string, M[]> = {};
  if (partitionMetadata.length === 0) return result;
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message });
    const current = result[partition];
    if (current === undefined) result[partition] = [message];
    else current.push(message);
  }
  return result;
}

/** A kafkajs module's source with a fix applied, or why the fix cannot be applied to it. */
type FixedSource = { readonly source: string } | { readonly reason: string };

/** `source` with each passage of `edits` replaced, or why it cannot be (each must occur exactly once). */
function applyEdits(source: string, edits: ReadonlyArray<readonly [from: string, to: string]>): FixedSource {
  let fixed = source;
  for (const [from, to] of edits) {
    const at = fixed.indexOf(from);
    if (at === -1 || fixed.indexOf(from, at + 1) !== -1) {
      return {
        reason: `its text is not kafkajs 2.2.4's (the passage starting '${from.trim().split('\n')[0]}' is not there once)`,
      };
    }
    fixed = fixed.slice(0, at) + to + fixed.slice(at + from.length);
  }
  return { source: fixed };
}

/**
 * kafkajs 2.2.4's produce v3 request module's source with the fix applied, or why it cannot be
 * (each passage must occur exactly once).
 */
export function fixProduceRequestSource(source: string): FixedSource {
  return applyEdits(source, REQUEST_EDITS);
}

/**
 * kafkajs 2.2.4's `protocol/encoder.js` source with the fix applied, or why it cannot be (each
 * passage must occur exactly once).
 */
export function fixEncoderSource(source: string): FixedSource {
  return applyEdits(source, ENCODER_EDITS);
}

/**
 * kafkajs 2.2.4's `protocol/request.js` source with the fix applied, or why it cannot be (the
 * passage must occur exactly once).
 */
export function fixFramingSource(source: string): FixedSource {
  return applyEdits(source, FRAMING_EDITS);
}

/**
 * kafkajs 2.2.4's `protocol/recordBatch/record/v0/index.js` source with the fix applied, or why
 * it cannot be (the passage must occur exactly once).
 */
export function fixRecordSource(source: string): FixedSource {
  return applyEdits(source, RECORD_EDITS);
}

/** Node's CommonJS `Module`, with the members a module put into the cache by hand needs. */
interface CjsModule {
  exports: unknown;
  filename: string;
  loaded: boolean;
  paths: string[];
  _compile(source: string, filename: string): void;
}
interface CjsModuleClass {
  new (id: string): CjsModule;
  _nodeModulePaths(dir: string): string[];
}

const require = createRequire(import.meta.url);
const Module = require('node:module') as unknown as CjsModuleClass;

/** A fresh CommonJS module for the file `filename`, resolving its own `require`s from there; not in the cache. */
function moduleAt(filename: string): CjsModule {
  const m = new Module(filename);
  m.filename = filename;
  m.paths = Module._nodeModulePaths(dirname(filename));
  return m;
}

/**
 * `source` compiled as the CommonJS module of the file `filename` (its relative `require`s
 * resolve from there, through the module cache), itself outside the cache.
 */
function compileCommonJs(filename: string, source: string): { exports: unknown } {
  const m = moduleAt(filename);
  m._compile(source, filename);
  return m;
}

function isOurs(exports: unknown): boolean {
  return (typeof exports === 'function' || (typeof exports === 'object' && exports !== null)) && FIXED in exports;
}

/**
 * Puts the fixed modules into `require`'s module cache, where kafkajs's own `require` of them
 * will find them, unless kafkajs (or that module) has been loaded already. Idempotent.
 */
export function installKafkajsFixes(require: NodeJS.Require): KafkajsFixes {
  const applied: string[] = [];
  const notApplied: string[] = [];
  let version: unknown;
  try {
    version = (require('kafkajs/package.json') as { version?: unknown }).version;
  } catch (e) {
    return { applied, notApplied: [`kafkajs's package.json could not be read: ${(e as Error).message.split('\n')[0]}`] };
  }
  if (version !== '2.2.4') return { applied, notApplied: [`kafkajs is ${String(version)}, and the fixes are made for 2.2.4`] };
  const cache = require.cache;

  /** Puts the module `make` returns for `file` into the cache, unless the file is there already. */
  const install = (name: string, file: string, make: (filename: string) => { exports: unknown }): void => {
    let filename: string;
    try {
      filename = require.resolve(file);
    } catch (e) {
      notApplied.push(`${name}: ${file} could not be found (${(e as Error).message.split('\n')[0]})`);
      return;
    }
    const cached = cache[filename];
    if (cached !== undefined) {
      if (isOurs(cached.exports)) applied.push(name);
      else notApplied.push(`${name}: kafkajs was loaded before Tributary's kafkajs module, so its own ${file} is in use`);
      return;
    }
    let m: { exports: unknown; loaded?: boolean };
    try {
      m = make(filename);
    } catch (e) {
      notApplied.push(`${name}: ${(e as Error).message}`);
      return;
    }
    (m.exports as Record<symbol, boolean>)[FIXED] = true;
    m.loaded = true;
    cache[filename] = m as unknown as NodeJS.Module;
    applied.push(name);
  };

  install('groupMessagesPerPartition', 'kafkajs/src/producer/groupMessagesPerPartition.js', (filename) => {
    if (readFileSync(filename, 'utf8') !== GROUP_SOURCE_2_2_4) throw new Error(`${filename} is not kafkajs 2.2.4's`);
    const m = moduleAt(filename);
    // A function of this module's own, so the mark does not land on a function shared with anything else.
    m.exports = (input: GroupInput<unknown>) => groupMessagesPerPartition(input);
    return m;
  });
  const compileFixed =
    (fix: (source: string) => FixedSource) =>
    (filename: string): { exports: unknown } => {
      const fixed = fix(readFileSync(filename, 'utf8'));
      if ('reason' in fixed) throw new Error(`${filename}: ${fixed.reason}`);
      return compileCommonJs(filename, fixed.source);
    };
  // The request module last: it requires the others (the encoder, the record, through the
  // record batch the checksum) when it loads.
  install('encoder', 'kafkajs/src/protocol/encoder.js', compileFixed(fixEncoderSource));
  install('framing', 'kafkajs/src/protocol/request.js', (filename) => {
    const m = compileFixed(fixFramingSource)(filename);
    const kafkajsFrame = m.exports as (args: FrameArgs) => Promise<unknown>;
    const Encoder = createRequire(filename)('./encoder') as ProduceEncoderDeps['Encoder'];
    m.exports = (args: FrameArgs) => frameRequest(args, kafkajsFrame, Encoder);
    return m;
  });
  install('crc32C', 'kafkajs/src/protocol/recordBatch/crc32C/crc32C.js', (filename) => {
    const sha256 = createHash('sha256').update(readFileSync(filename)).digest('hex');
    if (sha256 !== CRC32C_SHA256_2_2_4) throw new Error(`${filename} is not kafkajs 2.2.4's`);
    const m = moduleAt(filename);
    m.exports = (buffer: Uint8Array) => crc32c(buffer);
    return m;
  });
  install('record', 'kafkajs/src/protocol/recordBatch/record/v0/index.js', compileFixed(fixRecordSource));
  install('produce-v3-request', 'kafkajs/src/protocol/requests/produce/v3/request.js', (filename) => {
    const m = compileFixed(fixProduceRequestSource)(filename);
    const kafkajsRequest = m.exports as (args: ProduceArgs) => { encode: () => Promise<unknown> };
    const local = createRequire(filename);
    const deps: ProduceEncoderDeps = {
      Long: local('../../../../utils/long') as ProduceEncoderDeps['Long'],
      Encoder: local('../../../encoder') as ProduceEncoderDeps['Encoder'],
    };
    // The request as kafkajs's (fixed) module makes it, with a body written in one pass when it
    // is one that path takes (plain records, no compression), else by kafkajs's own encode.
    m.exports = (args: ProduceArgs) => {
      const request = kafkajsRequest(args);
      const encode = request.encode;
      request.encode = async () => {
        const body = encodeProduceBody(args, deps, crc32c);
        if (body !== undefined) {
          produceBodies.onePass++;
          return body;
        }
        produceBodies.kafkajs++;
        return encode();
      };
      return request;
    };
    return m;
  });
  // kafkajs's consumer/batch.js requires it when kafkajs loads (client, consumer, consumer group).
  install('filterAbortedMessages', 'kafkajs/src/consumer/filterAbortedMessages.js', (filename) => {
    const sha256 = createHash('sha256').update(readFileSync(filename)).digest('hex');
    if (sha256 !== FILTER_ABORTED_SHA256_2_2_4) throw new Error(`${filename} is not kafkajs 2.2.4's`);
    const m = moduleAt(filename);
    m.exports = (input: Parameters<typeof filterAbortedMessages>[0]) => filterAbortedMessages(input);
    return m;
  });
  return { applied, notApplied };
}

/** The warning a worker logs when kafkajs runs without the fixes, with {@link KafkajsFixes.notApplied}. */
export const KAFKAJS_UNFIXED =
  "kafkajs runs without some or all of Tributary's fixes (docs/kafkajs-producer.md): without a producer fix the same records, more slowly; without filterAbortedMessages a read_committed read (the offset, config and status stores) can take records of aborted transactions, when those of two producers overlap, for committed ones";

/** What became of the fixes in this thread; `notApplied` is empty when all seven are in force. */
export const kafkajsFixes: KafkajsFixes = installKafkajsFixes(require);

const kafkajs = require('kafkajs') as typeof Kafkajs;

// The values Tributary uses, each with its type of the same name where kafkajs has one.
export const Kafka = kafkajs.Kafka;
export type Kafka = Kafkajs.Kafka;
export const logLevel = kafkajs.logLevel;
export type logLevel = Kafkajs.logLevel;
export const Partitioners = kafkajs.Partitioners;
export const ConfigResourceTypes = kafkajs.ConfigResourceTypes;
export type ConfigResourceTypes = Kafkajs.ConfigResourceTypes;
