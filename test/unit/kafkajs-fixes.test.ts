import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  crc32c,
  fixEncoderSource,
  fixFramingSource,
  fixProduceRequestSource,
  fixRecordSource,
  groupMessagesPerPartition,
  installKafkajsFixes,
  kafkajsFixes,
} from '../../src/kafka/kafkajs-fixes.js';
import {
  encodeProduceBody,
  FRAME_ROOM,
  type ProduceArgs,
  type ProduceEncoderDeps,
} from '../../src/kafka/kafkajs-produce-encoder.js';
import { original } from '../helpers/kafkajs-original.js';

const require = createRequire(import.meta.url);
const GROUP = require.resolve('kafkajs/src/producer/groupMessagesPerPartition.js');
const REQUEST = require.resolve('kafkajs/src/protocol/requests/produce/v3/request.js');
const ENCODER = require.resolve('kafkajs/src/protocol/encoder.js');
const CRC32C = require.resolve('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js');
const RECORD = require.resolve('kafkajs/src/protocol/recordBatch/record/v0/index.js');
const FRAMING = require.resolve('kafkajs/src/protocol/request.js');
const FIXED = Symbol.for('tributary.kafkajs-fix');

/** What the one-pass Produce encoder takes from kafkajs: its Long, and its Encoder as Tributary loads it. */
function kafkajsDeps(): ProduceEncoderDeps {
  return {
    Long: require('kafkajs/src/utils/long') as ProduceEncoderDeps['Long'],
    Encoder: require(ENCODER) as ProduceEncoderDeps['Encoder'],
  };
}

type Group = typeof groupMessagesPerPartition;
interface Encoded {
  buffer: Buffer;
}
type ProduceRequest = (args: {
  acks: number;
  timeout: number;
  topicData: Array<{
    topic: string;
    partitions: Array<{ partition: number; firstSequence?: number; messages: unknown[] }>;
  }>;
}) => { encode(): Promise<Encoded> };

afterEach(() => {
  vi.restoreAllMocks();
});

describe('kafkajs as Tributary loads it', () => {
  it('has the seven fixes in force, in the modules kafkajs itself requires', () => {
    expect(kafkajsFixes).toEqual({
      applied: [
        'groupMessagesPerPartition',
        'encoder',
        'framing',
        'crc32C',
        'record',
        'produce-v3-request',
        'filterAbortedMessages',
      ],
      notApplied: [],
    });
    // What kafkajs's sendMessages.js, produce/index.js and every request module get from require().
    const kafkajsRequire = createRequire(GROUP);
    expect(FIXED in (kafkajsRequire('./groupMessagesPerPartition') as object)).toBe(true);
    expect(FIXED in (createRequire(REQUEST)('./request') as object)).toBe(true);
    expect(FIXED in (createRequire(REQUEST)('../../../encoder') as object)).toBe(true);
    // The record batch's checksum (through crc32C/index.js) and the request's Record.
    const batchRequire = createRequire(require.resolve('kafkajs/src/protocol/recordBatch/v0/index.js'));
    expect(FIXED in (batchRequire('../crc32C/crc32C') as object)).toBe(true);
    expect(FIXED in (createRequire(REQUEST)('../../../recordBatch/record/v0') as object)).toBe(true);
    // Every request's framing, as kafkajs's connection requires it.
    expect(FIXED in (createRequire(require.resolve('kafkajs/src/network/connection.js'))('../protocol/request') as object)).toBe(
      true,
    );
    // The read_committed filter, as every consumer's Batch requires it.
    expect(FIXED in (createRequire(require.resolve('kafkajs/src/consumer/batch.js'))('./filterAbortedMessages') as object)).toBe(
      true,
    );
    // And the comparisons below compare against kafkajs's own encoder, not the fixed one.
    expect(FIXED in (original<object>(ENCODER) as object)).toBe(false);
    expect(String(original<{ prototype: { writeUVarInt: unknown } }>(ENCODER).prototype.writeUVarInt)).toContain(
      'Buffer.from(byteArray)',
    );
    // And a second install finds them.
    expect(installKafkajsFixes(require).notApplied).toEqual([]);
  });

  it('groups messages as kafkajs 2.2.4 does: the same partitions, arrays and order', () => {
    const kafkajsGroup = original<Group>(GROUP);
    fc.assert(
      fc.property(
        fc.array(fc.record({ value: fc.string(), p: fc.integer({ min: -1, max: 7 }) }), { maxLength: 60 }),
        fc.integer({ min: 0, max: 8 }),
        (messages, partitions) => {
          const input = {
            topic: 't',
            partitionMetadata: Array.from({ length: partitions }, (_, i) => ({ partitionId: i })),
            messages,
            partitioner: ({ message }: { message: { p: number } }) => message.p,
          };
          const ours = groupMessagesPerPartition(input);
          const theirs = kafkajsGroup(input);
          expect(Object.keys(ours)).toEqual(Object.keys(theirs));
          for (const key of Object.keys(theirs)) {
            const a = ours[key] as unknown[];
            const b = theirs[key] as unknown[];
            expect(a.length).toBe(b.length);
            // The same message objects, not copies.
            for (let i = 0; i < a.length; i++) expect(a[i]).toBe(b[i]);
          }
        },
      ),
    );
  });

  it('encodes every kind of field byte for byte as kafkajs 2.2.4 does, or fails as it does', () => {
    /** A method of kafkajs's Encoder and its arguments. */
    type Op = readonly [method: string, ...args: unknown[]];
    interface EncoderLike {
      readonly buffer: Buffer;
    }
    interface EncoderClass {
      new (initialSize?: number): EncoderLike;
      readonly prototype: EncoderLike;
      sizeOfVarLong(value: unknown): number;
    }
    const Fixed = require(ENCODER) as EncoderClass;
    const Theirs = original<EncoderClass>(ENCODER);
    expect(Fixed).not.toBe(Theirs);
    // Strings of any UTF-16 code units: multi-byte characters and lone surrogates included.
    const text = (maxLength: number) => fc.string({ maxLength, unit: 'binary' });
    const data = fc.oneof(
      fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
      text(40),
      fc.constant(null),
    );
    // Varlongs: integers either side of the fix's bound (2^30 in magnitude), far beyond it,
    // and what kafkajs's Long path alone takes (non-integers, NaN, -0, digit strings).
    const long = fc.oneof(
      fc.integer({ min: -(2 ** 30) - 3, max: -(2 ** 30) + 3 }),
      fc.integer({ min: 2 ** 30 - 3, max: 2 ** 30 + 3 }),
      fc.integer(),
      fc.maxSafeInteger(),
      fc.constantFrom(0, -0, 1, -1, 63, 64, -64, -65, 8191, 8192, Number.NaN, 1.5, -2.5, 2 ** 31, -(2 ** 31), 2 ** 53),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map(String),
    );
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.tuple(fc.constant('writeInt8'), fc.integer({ min: -128, max: 127 })),
      fc.tuple(fc.constant('writeInt16'), fc.integer({ min: -32768, max: 32767 })),
      fc.tuple(fc.constant('writeInt32'), fc.integer()),
      fc.tuple(fc.constant('writeUInt32'), fc.nat()),
      fc.tuple(fc.constant('writeInt64'), long),
      fc.tuple(fc.constant('writeDouble'), fc.double()),
      fc.tuple(fc.constant('writeBoolean'), fc.boolean()),
      fc.tuple(fc.constantFrom('writeString', 'writeVarIntString', 'writeUVarIntString'), fc.option(text(40), { nil: null })),
      fc.tuple(fc.constantFrom('writeBytes', 'writeVarIntBytes', 'writeUVarIntBytes'), data),
      fc.tuple(
        fc.constantFrom('writeVarInt', 'writeUVarInt'),
        fc.oneof(
          fc.integer(),
          fc.nat(300),
          fc.maxSafeInteger(),
          fc.constantFrom(-1, -0, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 40, Number.NaN, 1.5, '7'),
        ),
      ),
      fc.tuple(fc.constant('writeVarLong'), long),
      fc.tuple(fc.constant('writeArray'), fc.array(fc.integer(), { maxLength: 5 }), fc.constant('int32')),
      fc.tuple(fc.constant('writeArray'), fc.array(text(5), { maxLength: 5 }), fc.constant('string')),
      fc.tuple(fc.constant('writeArray'), fc.array(fc.oneof(fc.integer(), text(5)), { maxLength: 5 })),
      fc.tuple(
        fc.constant('writeBuffer'),
        fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
      ),
    );
    // Each method the ops call is one both encoders have (a missing one would fail alike in both).
    for (const m of [
      'writeInt8',
      'writeInt16',
      'writeInt32',
      'writeUInt32',
      'writeInt64',
      'writeDouble',
      'writeBoolean',
      'writeString',
      'writeVarIntString',
      'writeUVarIntString',
      'writeBytes',
      'writeVarIntBytes',
      'writeUVarIntBytes',
      'writeVarInt',
      'writeUVarInt',
      'writeVarLong',
      'writeArray',
      'writeBuffer',
      'writeEncoder',
      'writeEncoderArray',
      'writeVarIntArray',
      'writeUVarIntArray',
      'writeNullableArray',
    ]) {
      expect(typeof (Fixed.prototype as unknown as Record<string, unknown>)[m]).toBe('function');
      expect(typeof (Theirs.prototype as unknown as Record<string, unknown>)[m]).toBe('function');
    }
    const program = fc.record({
      initialSize: fc.option(fc.integer({ min: 1, max: 2048 }), { nil: undefined }),
      ops: fc.array(op, { maxLength: 40 }),
      // Encoders written into this one (kafkajs writes a record's encoder into its batch's), and how.
      nested: fc.array(fc.array(op, { maxLength: 6 }), { maxLength: 4 }),
      join: fc.constantFrom(
        ['writeVarIntArray', 'object'],
        ['writeUVarIntArray', 'object'],
        ['writeArray', 'object'],
        ['writeArray'],
        ['writeNullableArray', 'object'],
        ['writeEncoderArray'],
        ['writeEncoder'],
        ['writeBuffer'],
      ),
    });
    type Program = { initialSize: number | undefined; ops: Op[]; nested: Op[][]; join: readonly string[] };
    const run = (Encoder: EncoderClass, p: Program) => {
      try {
        const apply = (e: EncoderLike, ops: readonly Op[]) => {
          for (const [method, ...args] of ops)
            (e as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!.apply(e, args);
          return e;
        };
        const e = apply(p.initialSize === undefined ? new Encoder() : new Encoder(p.initialSize), p.ops);
        const inner = p.nested.map((ops) => apply(new Encoder(), ops));
        const [join, type] = p.join as [string, string | undefined];
        if (join === 'writeEncoder') for (const i of inner) apply(e, [['writeEncoder', i]]);
        else if (join === 'writeBuffer') for (const i of inner) apply(e, [['writeBuffer', i.buffer]]);
        else if (join === 'writeEncoderArray') apply(e, [['writeEncoderArray', inner]]);
        else apply(e, [type === undefined ? [join, inner] : [join, inner, type]]);
        return { bytes: e.buffer.toString('hex') };
      } catch (e) {
        return { error: String(e) };
      }
    };
    // Every byte the fixed encoder's buffers start with is 0xa5, not a zero: an unwritten byte
    // that reached its output would differ from kafkajs's.
    const allocUnsafe = Buffer.allocUnsafe;
    vi.spyOn(Buffer, 'allocUnsafe').mockImplementation((size: number) => allocUnsafe(size).fill(0xa5));
    let encoded = 0;
    fc.assert(
      fc.property(program, (p) => {
        const ours = run(Fixed, p);
        expect(ours).toEqual(run(Theirs, p));
        if ('bytes' in ours) encoded++;
      }),
      { numRuns: 500 },
    );
    expect(encoded).toBeGreaterThan(200);
    expect(Buffer.allocUnsafe).toHaveBeenCalled();
    fc.assert(
      fc.property(long, (v) => {
        const size = (Encoder: EncoderClass) => {
          try {
            return Encoder.sizeOfVarLong(v);
          } catch (e) {
            return String(e);
          }
        };
        expect(size(Fixed)).toBe(size(Theirs));
      }),
      { numRuns: 2000 },
    );
  });

  it("writes varints and varlongs that end at or past its buffer's end as kafkajs 2.2.4 does", () => {
    type Encoder = { readonly buffer: Buffer } & Record<string, (value: unknown) => unknown>;
    type EncoderClass = new (initialSize?: number) => Encoder;
    const Fixed = require(ENCODER) as EncoderClass;
    const Theirs = original<EncoderClass>(ENCODER);
    // 1 to 5 bytes as varints; both sides of the varlong fast path's bound.
    const values = [0, 1, -1, 127, 128, 0x7fffffff, 2 ** 31, 0xffffffff, 2 ** 30 - 1, 2 ** 30, -(2 ** 30), -(2 ** 31)];
    let compared = 0;
    for (let capacity = 2; capacity <= 1024; capacity *= 2) {
      for (let left = 0; left <= 5; left++) {
        for (const method of ['writeUVarInt', 'writeVarInt', 'writeVarLong']) {
          for (const value of values) {
            // An encoder of `capacity` bytes (kafkajs rounds its initial size up to a power of two) with `left` of them free.
            const bytes = (E: EncoderClass) => {
              const e = new E(capacity - 1);
              for (let i = 0; i < capacity - left; i++) e.writeInt8!(0);
              e[method]!(value);
              return e.buffer.toString('hex');
            };
            expect(bytes(Fixed), `${method}(${value}) with ${left} of ${capacity} bytes free`).toBe(bytes(Theirs));
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(10 * 6 * 3 * values.length);
  });

  it('computes the CRC-32C of any bytes as kafkajs 2.2.4 does', () => {
    const kafkajsCrc = original<(b: Buffer) => number>(CRC32C);
    const fixedCrc = require(CRC32C) as (b: Buffer) => number;
    expect(FIXED in fixedCrc).toBe(true);
    expect(FIXED in kafkajsCrc).toBe(false);
    // CRC-32C's published check value, and the empty input.
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(fixedCrc(Buffer.alloc(0))).toBe(kafkajsCrc(Buffer.alloc(0)));
    // Every length around the 8-byte steps, at every alignment in a larger buffer (kafkajs hands
    // it slices of an encoder's buffer).
    const bytes = fc.uint8Array({ minLength: 0, maxLength: 300 });
    fc.assert(
      fc.property(bytes, fc.nat(15), fc.nat(15), (content, before, after) => {
        const whole = Buffer.alloc(before + content.length + after, 0xa5);
        whole.set(content, before);
        const slice = whole.subarray(before, before + content.length);
        const expected = kafkajsCrc(slice);
        expect(fixedCrc(slice)).toBe(expected);
        expect(crc32c(new Uint8Array(content))).toBe(expected);
      }),
      { numRuns: 2000 },
    );
    // A batch's size, and all-ones bytes (every bit of the tables used).
    const large = Buffer.from(Array.from({ length: 131_077 }, (_, i) => (i * 2_654_435_761) >>> 24));
    expect(fixedCrc(large)).toBe(kafkajsCrc(large));
    expect(fixedCrc(Buffer.alloc(1031, 0xff))).toBe(kafkajsCrc(Buffer.alloc(1031, 0xff)));
  });

  it('frames every request byte for byte as kafkajs 2.2.4 does, or fails as it does', async () => {
    type Framing = (args: unknown) => Promise<{ buffer: Buffer }>;
    type EncoderClass = new () => { writeBytes(b: Buffer): unknown; writeInt32(n: number): unknown };
    const kafkajsFraming = original<Framing>(FRAMING);
    const fixedFraming = require(FRAMING) as Framing;
    expect(FIXED in fixedFraming).toBe(true);
    const Ours = require(ENCODER) as EncoderClass;
    const deps = kafkajsDeps();
    // A body written in one pass (framed in the room before it) and one kafkajs's way (copied).
    const produceBody = fc.array(fc.uint8Array({ maxLength: 300 }), { minLength: 1, maxLength: 5 }).map((values) => () => {
      const messages = values.map((v) => ({ value: Buffer.from(v) }));
      return encodeProduceBody(
        { acks: -1, timeout: 1000, topicData: [{ topic: 't', partitions: [{ partition: 0, messages }] }] },
        deps,
        crc32c,
      );
    });
    const payload = fc.oneof(
      { weight: 8, arbitrary: produceBody },
      { weight: 8, arbitrary: fc.uint8Array({ maxLength: 2000 }).map((a) => () => new Ours().writeBytes(Buffer.from(a))) },
      { weight: 1, arbitrary: fc.constant(() => new Ours()) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          () => null,
          () => Buffer.from('x'),
          () => ({ buf: 'x' }),
        ),
      },
    );
    const args = fc.record({
      correlationId: fc.oneof(
        { weight: 8, arbitrary: fc.integer({ min: 0, max: 2 ** 31 - 1 }) },
        { weight: 1, arbitrary: fc.constant(2 ** 31) },
      ),
      clientId: fc.oneof(
        { weight: 8, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
        // Longer than the room before a one-pass body: framed kafkajs's way.
        { weight: 1, arbitrary: fc.string({ minLength: 240, maxLength: 300 }) },
        { weight: 1, arbitrary: fc.constantFrom(null, undefined, 7) },
      ),
      apiKey: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 70 }) }, { weight: 1, arbitrary: fc.constant(40_000) }),
      apiVersion: fc.integer({ min: 0, max: 12 }),
      payload,
    });
    const outcome = async (frame: Framing, a: { payload: () => unknown; apiKey: number; apiVersion: number }) => {
      let encoded = 0;
      try {
        const encode = async () => {
          encoded++;
          return a.payload();
        };
        const request = { apiKey: a.apiKey, apiVersion: a.apiVersion, encode };
        return { bytes: (await frame({ ...a, request })).buffer.toString('hex'), encoded };
      } catch (e) {
        return { error: String(e), encoded };
      }
    };
    // The one-pass bodies stamp records without a time with the clock: the same for both.
    vi.spyOn(Date, 'now').mockReturnValue(1_764_633_600_000);
    let framed = 0;
    await fc.assert(
      fc.asyncProperty(args, async (a) => {
        const ours = await outcome(fixedFraming, a);
        expect(ours).toEqual(await outcome(kafkajsFraming, a));
        if ('bytes' in ours) framed++;
      }),
      { numRuns: 800 },
    );
    expect(framed).toBeGreaterThan(400);
  });

  it('frames a one-pass Produce body in the room before it, without copying it', async () => {
    type Framed = { buf: Buffer; buffer: Buffer };
    const fixedFraming = require(FRAMING) as (args: unknown) => Promise<Framed>;
    const deps = kafkajsDeps();
    const body = encodeProduceBody(
      { acks: -1, timeout: 1000, topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [{ value: 'v' }] }] }] },
      deps,
      crc32c,
    );
    const frame = (clientId: string) =>
      fixedFraming({ correlationId: 7, clientId, request: { apiKey: 0, apiVersion: 7, encode: async () => body } });
    if (body === undefined) throw new Error('not taken');
    // Whether `b` is the body's own memory, from its start (small buffers share Node's pool).
    const sameMemory = (b: Buffer) =>
      b.buffer === body.buf.buffer && b.byteOffset + b.length === body.buf.byteOffset + body.offset;
    const framed = await frame('tributary-producer');
    expect(sameMemory(framed.buf)).toBe(true);
    expect(
      framed.buffer
        .subarray(framed.buffer.length - (body?.offset ?? 0))
        .equals(body?.buf.subarray(0, body.offset) ?? Buffer.alloc(0)),
    ).toBe(true);
    // A client id longer than the room: framed kafkajs's way, in a buffer of its own.
    const long = await frame('c'.repeat(FRAME_ROOM));
    expect(sameMemory(long.buf.subarray(0, long.buffer.length))).toBe(false);
    expect(
      long.buffer.equals(
        Buffer.concat([long.buffer.subarray(0, long.buffer.length - body.offset), body.buf.subarray(0, body.offset)]),
      ),
    ).toBe(true);
  });

  it('encodes records byte for byte as kafkajs 2.2.4 does, small ones in an encoder of their own size', () => {
    type Record = (args: unknown) => { buffer: Buffer; buf: Buffer };
    const kafkajsRecord = original<Record>(RECORD);
    const fixedRecord = require(RECORD) as Record;
    expect(FIXED in fixedRecord).toBe(true);
    const data = fc.oneof(
      fc.uint8Array({ maxLength: 1200 }).map((a) => Buffer.from(a)),
      fc.string({ maxLength: 600 }),
    );
    const record = fc.record(
      {
        offsetDelta: fc.nat(100_000),
        timestampDelta: fc.oneof(fc.integer({ min: -1_000_000, max: 1_000_000 }), fc.constant(2 ** 40)),
        key: fc.option(data, { nil: null }),
        value: fc.option(data, { nil: null }),
        headers: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.oneof(data, fc.array(data, { maxLength: 2 })), {
          maxKeys: 2,
        }),
      },
      { requiredKeys: ['value'] },
    );
    const outcome = (make: Record, args: unknown) => {
      try {
        return { bytes: make(args).buffer.toString('hex') };
      } catch (e) {
        return { error: String(e) };
      }
    };
    fc.assert(
      fc.property(record, (args) => {
        expect(outcome(fixedRecord, args)).toEqual(outcome(kafkajsRecord, args));
      }),
      { numRuns: 500 },
    );
    // What the fix is for: a 100-byte record's encoder is 128 bytes, not kafkajs's 512.
    const small = { offsetDelta: 1, timestampDelta: 0, key: null, value: Buffer.alloc(100) };
    expect(fixedRecord(small).buf.length).toBe(128);
    expect(kafkajsRecord(small).buf.length).toBe(512);
  });

  it('encodes Produce requests byte for byte as kafkajs 2.2.4 does, or fails as it does', async () => {
    const kafkajsRequest = original<ProduceRequest>(REQUEST);
    const fixedRequest = require(REQUEST) as ProduceRequest;
    expect(fixedRequest).not.toBe(kafkajsRequest);
    const bytes = fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a));
    const data = fc.oneof(bytes, fc.string({ maxLength: 20 }));
    const message = fc.record(
      {
        key: fc.option(data, { nil: null }),
        value: fc.option(data, { nil: null }),
        headers: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.oneof(data, fc.array(data, { maxLength: 3 })), {
          maxKeys: 3,
        }),
        // What a producer may carry: milliseconds of 13 digits (as numbers or text, where the
        // fix sorts as numbers), and everything else, which it must sort as kafkajs does.
        timestamp: fc.oneof(
          { weight: 6, arbitrary: fc.constant(undefined) },
          { weight: 6, arbitrary: fc.integer({ min: 1_000_000_000_000, max: 9_999_999_999_999 }) },
          { weight: 3, arbitrary: fc.integer({ min: 1_000_000_000_000, max: 9_999_999_999_999 }).map(String) },
          { weight: 2, arbitrary: fc.integer({ min: 0, max: 99_999_999_999_999 }) },
          { weight: 1, arbitrary: fc.constantFrom(0, Number.NaN, 'NaN', '', -1, 1.5) },
        ),
        partition: fc.nat(5),
      },
      { requiredKeys: ['value'] },
    );
    const partitions = fc.uniqueArray(
      fc.record({
        partition: fc.nat(5),
        firstSequence: fc.option(fc.nat(1000), { nil: undefined }),
        messages: fc.array(message, { minLength: 1, maxLength: 12 }),
      }),
      { minLength: 1, maxLength: 3, selector: (p) => p.partition },
    );
    const request = fc.record({
      acks: fc.constantFrom(-1, 0, 1),
      timeout: fc.constant(30_000),
      transactionalId: fc.option(fc.string({ minLength: 1, maxLength: 8 }), { nil: undefined }),
      compression: fc.constantFrom(0, 1), // none, gzip
      topicData: fc.uniqueArray(fc.record({ topic: fc.string({ minLength: 1, maxLength: 8 }), partitions }), {
        minLength: 1,
        maxLength: 3,
        selector: (t) => t.topic,
      }),
    });
    vi.spyOn(Date, 'now').mockReturnValue(1_764_633_600_000);
    const outcome = async (make: ProduceRequest, args: Parameters<ProduceRequest>[0]) => {
      try {
        return { bytes: (await make(args).encode()).buffer.toString('hex') };
      } catch (e) {
        return { error: String(e) };
      }
    };
    let encoded = 0;
    await fc.assert(
      fc.asyncProperty(request, async (args) => {
        const ours = await outcome(fixedRequest, args);
        expect(ours).toEqual(await outcome(kafkajsRequest, args));
        if ('bytes' in ours) encoded++;
      }),
      { numRuns: 300 },
    );
    // Not a property that holds only because everything fails.
    expect(encoded).toBeGreaterThan(100);
  });

  it('writes plain uncompressed Produce requests in one pass, byte for byte as kafkajs 2.2.4 does', async () => {
    const kafkajsRequest = original<ProduceRequest>(REQUEST);
    const deps = kafkajsDeps();
    const bytes = fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a));
    // Strings of any UTF-16 code units, lone surrogates included (written as U+FFFD).
    const text = fc.string({ unit: 'binary', maxLength: 100 });
    const data = fc.oneof(bytes, text);
    const timestamp = fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.integer({ min: 1_000_000_000_000, max: 9_999_999_999_999 }),
    );
    const message = fc.record(
      {
        key: fc.oneof(data, fc.constant(null), fc.constant(undefined)),
        value: fc.oneof(data, fc.constant(null)),
        headers: fc.dictionary(fc.string({ maxLength: 5 }), fc.oneof(data, fc.array(data, { maxLength: 3 })), { maxKeys: 3 }),
        timestamp,
      },
      { requiredKeys: ['value'] },
    );
    const partitions = fc.array(
      fc.record(
        {
          partition: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          firstSequence: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
          messages: fc.array(message, { minLength: 1, maxLength: 20 }),
        },
        { requiredKeys: ['partition', 'messages'] },
      ),
      { maxLength: 3 },
    );
    const request = fc.record(
      {
        acks: fc.constantFrom(-1, 0, 1),
        timeout: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        transactionalId: fc.oneof(fc.constant(null), fc.string({ maxLength: 8 })),
        producerId: fc.oneof(
          fc.integer({ min: -1, max: 2 ** 31 - 1 }),
          fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => deps.Long.fromValue(n.toString())),
          // As kafkajs's idempotent producer passes it: its decoder's int64 as decimal text.
          fc.bigInt({ min: -(10n ** 18n) + 1n, max: 10n ** 18n - 1n }).map(String),
        ),
        producerEpoch: fc.integer({ min: 0, max: 32_767 }),
        compression: fc.constant(0),
        topicData: fc.array(fc.record({ topic: fc.string({ maxLength: 10 }), partitions }), { maxLength: 3 }),
      },
      { requiredKeys: ['acks', 'timeout', 'topicData'] },
    );
    let now = 1_764_633_600_000;
    vi.spyOn(Date, 'now').mockImplementation(() => now++);
    await fc.assert(
      fc.asyncProperty(request, async (args) => {
        const start = now;
        const ours = encodeProduceBody(args, deps, crc32c);
        if (ours === undefined) throw new Error('a plain request was not taken');
        now = start; // kafkajs reads the clock as often, at the same points
        const theirs = (await kafkajsRequest(args as Parameters<ProduceRequest>[0]).encode()).buffer;
        expect(ours.buf.subarray(0, ours.offset).toString('hex')).toBe(theirs.toString('hex'));
      }),
      { numRuns: 400 },
    );
  });

  it('leaves every other Produce request to kafkajs, which encodes it as before', async () => {
    const deps = kafkajsDeps();
    const plain = { value: Buffer.from('v') };
    const request = (messages: unknown[], extra: Record<string, unknown> = {}) => ({
      acks: -1,
      timeout: 1000,
      topicData: [{ topic: 't', partitions: [{ partition: 0, messages }] }],
      ...extra,
    });
    expect(encodeProduceBody(request([plain]), deps, crc32c)).toBeDefined();
    expect(encodeProduceBody(request([plain], { producerId: '4001', producerEpoch: 3 }), deps, crc32c)).toBeDefined();
    const others: Array<[string, unknown]> = [
      ['gzip', request([plain], { compression: 1 })],
      ['an out-of-range acks', request([plain], { acks: 40_000 })],
      ['a fractional timeout', request([plain], { timeout: 1.5 })],
      ['a numeric transactional id', request([plain], { transactionalId: 7 })],
      ['a null producer id', request([plain], { producerId: null })],
      ['a producer id as text of 19 digits', request([plain], { producerId: '1000000000000000000' })],
      ['a producer id as other text', request([plain], { producerId: '0x10' })],
      ['no partitions array', { acks: -1, timeout: 1, topicData: [{ topic: 't' }] }],
      ['a partition without messages', request([])],
      [
        'a negative-zero-free but fractional partition',
        { acks: -1, timeout: 1, topicData: [{ topic: 't', partitions: [{ partition: 0.5, messages: [plain] }] }] },
      ],
      ['a number value', request([{ value: 5 }])],
      ['a Uint8Array key', request([{ key: new Uint8Array(2), value: 'v' }])],
      ['a timestamp of 12 digits', request([{ value: 'v', timestamp: 999_999_999_999 }])],
      ['a timestamp as text', request([{ value: 'v', timestamp: '1764633600000' }])],
      ['a NaN timestamp', request([{ value: 'v', timestamp: Number.NaN }])],
      ['a zero timestamp', request([{ value: 'v', timestamp: 0 }])],
      ['null headers', request([{ value: 'v', headers: null }])],
      ['a null header value', request([{ value: 'v', headers: { h: null } }])],
      ['a number header value', request([{ value: 'v', headers: { h: 1 } }])],
      ['an array header with a number', request([{ value: 'v', headers: { h: ['a', 2] } }])],
      ['a message that is not an object', request(['v'])],
    ];
    // Half a gigabyte each, never touched: together past what kafkajs's encoders can hold.
    const half = Buffer.allocUnsafeSlow(2 ** 29);
    others.push(
      ['a transactional id over 32,767 bytes', request([plain], { transactionalId: 'x'.repeat(32_768) })],
      ['a topic name over 32,767 bytes', { acks: -1, timeout: 1, topicData: [{ topic: 'é'.repeat(16_384), partitions: [] }] }],
      ['a request of a gigabyte', request([{ value: half }, { value: half }])],
    );
    for (const [what, args] of others) {
      expect({ what, taken: encodeProduceBody(args as ProduceArgs, deps, crc32c) !== undefined }).toEqual({ what, taken: false });
    }
    // A clock that is not an integer millisecond time (a mocked one): kafkajs's path.
    vi.spyOn(Date, 'now').mockReturnValue(1_764_633_600_000.5);
    expect(encodeProduceBody(request([plain]), deps, crc32c)).toBeUndefined();
  });

  it('reads each field of a message once, so a getter cannot make sizes and bytes disagree', () => {
    const deps = kafkajsDeps();
    const reads: Record<string, number> = {};
    const values = [Buffer.from('short'), Buffer.from('a longer value')];
    const counted = <T>(name: string, get: (n: number) => T) => ({
      enumerable: true,
      get: () => {
        reads[name] = (reads[name] ?? 0) + 1;
        return get(reads[name] as number);
      },
    });
    // Each read of the value gives another length; of the headers, another header.
    const message = Object.defineProperties(
      {},
      {
        key: counted('key', () => null),
        value: counted('value', (n) => values[n % 2]),
        timestamp: counted('timestamp', (n) => 1_764_633_600_000 + n),
        headers: counted('headers', (n) => ({ [`h${n}`]: 'v' })),
      },
    );
    const body = encodeProduceBody(
      { acks: -1, timeout: 1000, topicData: [{ topic: 't', partitions: [{ partition: 0, messages: [message] }] }] },
      deps,
      crc32c,
    );
    expect(reads).toEqual({ key: 1, value: 1, timestamp: 1, headers: 1 });
    // What was read once is what was written: value 'a longer value', header h1, timestamp +1.
    const bytes = body?.buf.subarray(0, body.offset) ?? Buffer.alloc(0);
    expect(bytes.includes(Buffer.from('a longer value'))).toBe(true);
    expect(bytes.includes(Buffer.from('h1'))).toBe(true);
  });

  it('sorts equal timestamps of both types (number, digit string) as kafkajs does', async () => {
    const fixedRequest = require(REQUEST) as ProduceRequest;
    const kafkajsRequest = original<ProduceRequest>(REQUEST);
    vi.spyOn(Date, 'now').mockReturnValue(1_764_633_600_000);
    const timestamps = [1_764_633_600_001, '1764633600000', 1_764_633_600_000, '1764633600001', '1764633600000'];
    const args = {
      acks: -1,
      timeout: 1000,
      topicData: [
        {
          topic: 't',
          partitions: [{ partition: 0, messages: timestamps.map((timestamp) => ({ value: Buffer.from('v'), timestamp })) }],
        },
      ],
    };
    const ours = (await fixedRequest(args).encode()).buffer;
    expect(ours.equals((await kafkajsRequest(args).encode()).buffer)).toBe(true);
  });

  it('sorts a NaN timestamp as kafkajs does (last), not first, so the batch keeps its times', async () => {
    const fixedRequest = require(REQUEST) as ProduceRequest;
    const kafkajsRequest = original<ProduceRequest>(REQUEST);
    vi.spyOn(Date, 'now').mockReturnValue(1_764_633_600_000);
    const topic = 't';
    const args = {
      acks: -1,
      timeout: 1000,
      topicData: [
        {
          topic,
          partitions: [
            {
              partition: 0,
              messages: [Number.NaN, 1_764_633_600_500, 1_764_633_600_000].map((timestamp) => ({
                value: Buffer.from('v'),
                timestamp,
              })),
            },
          ],
        },
      ],
    };
    // transactional id (null: int16), acks, timeout, topics (1), topic name, partitions (1), partition,
    // record set size; then the batch: base offset, length, leader epoch, magic, crc, attributes,
    // last offset delta, first timestamp, max timestamp.
    const batch = 2 + 2 + 4 + 4 + (2 + topic.length) + 4 + 4 + 4;
    const first = batch + 8 + 4 + 4 + 1 + 4 + 2 + 4;
    const ours = (await fixedRequest(args).encode()).buffer;
    expect(ours.equals((await kafkajsRequest(args).encode()).buffer)).toBe(true);
    // kafkajs's string order: '1764633600000' < '1764633600500' < 'NaN'; a NaN first would make
    // every record's time delta NaN, written as 0.
    expect(Number(ours.readBigInt64BE(first))).toBe(1_764_633_600_000);
  });
});

describe('installKafkajsFixes', () => {
  /** A `require` that sees kafkajs as `version`, with `cache` as its module cache. */
  function requireWith(version: string, cache: Record<string, unknown>): NodeJS.Require {
    const fake = ((id: string) => (id === 'kafkajs/package.json' ? { version } : require(id))) as NodeJS.Require;
    fake.resolve = require.resolve;
    fake.cache = cache as NodeJS.Require['cache'];
    return fake;
  }

  it('leaves kafkajs as it is when kafkajs was loaded before, and says so', () => {
    const cache = { [GROUP]: { exports: () => ({}) } };
    const result = installKafkajsFixes(requireWith('2.2.4', cache));
    expect(result.notApplied).toEqual([expect.stringContaining('groupMessagesPerPartition: kafkajs was loaded before')]);
    // The request module was not loaded yet: it is fixed, in that cache only.
    expect(result.applied).toEqual(['encoder', 'framing', 'crc32C', 'record', 'produce-v3-request', 'filterAbortedMessages']);
    expect(FIXED in ((cache as Record<string, { exports: object }>)[REQUEST]?.exports ?? {})).toBe(true);
  });

  it('leaves another kafkajs version alone', () => {
    const cache = {};
    expect(installKafkajsFixes(requireWith('2.3.0', cache))).toEqual({
      applied: [],
      notApplied: ['kafkajs is 2.3.0, and the fixes are made for 2.2.4'],
    });
    expect(cache).toEqual({});
  });

  it("refuses a request module whose text is not kafkajs 2.2.4's", () => {
    const source = readFileSync(REQUEST, 'utf8');
    expect('source' in fixProduceRequestSource(source)).toBe(true);
    const changed = source.replace('.sort()', '.sort(byNumber)');
    expect(fixProduceRequestSource(changed)).toEqual({ reason: expect.stringContaining("'.filter(timestamp") });
    const twice = `${source}\n${source}`;
    expect(fixProduceRequestSource(twice)).toEqual({ reason: expect.stringContaining('is not there once') });
  });

  it("refuses a framing module whose text is not kafkajs 2.2.4's", () => {
    const source = readFileSync(FRAMING, 'utf8');
    expect('source' in fixFramingSource(source)).toBe(true);
    const changed = source.replace('.writeString(clientId)', '.writeString(clientId || null)');
    expect(fixFramingSource(changed)).toEqual({ reason: expect.stringContaining("'const payload = await encode()'") });
  });

  it("refuses a record module whose text is not kafkajs 2.2.4's", () => {
    const source = readFileSync(RECORD, 'utf8');
    expect('source' in fixRecordSource(source)).toBe(true);
    const changed = source.replace('return new Encoder()', 'return new Encoder(64)');
    expect(fixRecordSource(changed)).toEqual({ reason: expect.stringContaining("'return new Encoder()'") });
  });

  it("leaves a checksum module that is not kafkajs 2.2.4's alone, and fixes the rest", () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-crc-'));
    try {
      const changed = join(dir, 'crc32C.js');
      writeFileSync(changed, readFileSync(CRC32C, 'utf8').replace('0xf26b8303', '0xf26b8304'));
      const cache: Record<string, unknown> = {};
      const fake = requireWith('2.2.4', cache);
      fake.resolve = ((id: string) => (id.endsWith('crc32C/crc32C.js') ? changed : require.resolve(id))) as NodeJS.RequireResolve;
      const result = installKafkajsFixes(fake);
      expect(result.notApplied).toEqual([`crc32C: ${changed} is not kafkajs 2.2.4's`]);
      expect(result.applied).toEqual([
        'groupMessagesPerPartition',
        'encoder',
        'framing',
        'record',
        'produce-v3-request',
        'filterAbortedMessages',
      ]);
      expect(cache[changed]).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("leaves a read_committed filter that is not kafkajs 2.2.4's alone, and says so", () => {
    const dir = mkdtempSync(join(tmpdir(), 'tributary-filter-'));
    try {
      const changed = join(dir, 'filterAbortedMessages.js');
      const source = readFileSync(require.resolve('kafkajs/src/consumer/filterAbortedMessages.js'), 'utf8');
      writeFileSync(changed, source.replace('remainingAbortedTransactions.shift()', 'remainingAbortedTransactions.pop()'));
      const cache: Record<string, unknown> = {};
      const fake = requireWith('2.2.4', cache);
      fake.resolve = ((id: string) =>
        id.endsWith('consumer/filterAbortedMessages.js') ? changed : require.resolve(id)) as NodeJS.RequireResolve;
      const result = installKafkajsFixes(fake);
      expect(result.notApplied).toEqual([`filterAbortedMessages: ${changed} is not kafkajs 2.2.4's`]);
      expect(result.applied).toEqual([
        'groupMessagesPerPartition',
        'encoder',
        'framing',
        'crc32C',
        'record',
        'produce-v3-request',
      ]);
      expect(cache[changed]).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses an encoder whose text is not kafkajs 2.2.4's", () => {
    const source = readFileSync(ENCODER, 'utf8');
    expect('source' in fixEncoderSource(source)).toBe(true);
    const changed = source.replace('Buffer.alloc(newLength)', 'Buffer.alloc(newLength * 2)');
    expect(fixEncoderSource(changed)).toEqual({ reason: expect.stringContaining("'const newBuffer = Buffer.alloc(newLength)'") });
  });
});

describe("Tributary's sources", () => {
  it("take kafkajs's values from src/kafka/kafkajs-fixes.ts only", () => {
    const root = fileURLToPath(new URL('../../src/', import.meta.url));
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith('.ts')) files.push(path);
      }
    };
    walk(root);
    const offending: string[] = [];
    for (const file of files) {
      if (file.endsWith(join('kafka', 'kafkajs-fixes.ts'))) continue;
      // Code only: TSDoc examples show users importing kafkajs as they would.
      const code = readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => !/^\s*(\*|\/\/)/.test(line))
        .join('\n');
      const from = /\b(import|export)\s+(?!type\b)[^;]*?from\s+['"`]kafkajs(\/[^'"`]*)?['"`]/.test(code);
      const bare = /\bimport\s+['"`]kafkajs(\/[^'"`]*)?['"`]/.test(code);
      const dynamic = /\b(require|import)\(\s*['"`]kafkajs(\/[^'"`]*)?['"`]\s*\)/.test(code);
      if (from || bare || dynamic) offending.push(file.slice(root.length));
    }
    expect(files.length).toBeGreaterThan(50);
    expect(offending).toEqual([]);
  });
});
