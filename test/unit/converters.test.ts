import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { bytesConverter, converterNamed, jsonConverter, stringConverter } from '../../src/runtime/converters.js';

describe('converters', () => {
  it('json writes compact JSON like JsonConverter with schemas.enable=false', () => {
    expect(jsonConverter({ a: 1, b: [true, null] }, 't')?.toString()).toBe('{"a":1,"b":[true,null]}');
    expect(jsonConverter(null, 't')).toBeNull();
    expect(jsonConverter(Buffer.from('hi'), 't')?.toString()).toBe('"aGk="');
  });

  it('json refuses a value JSON has no text for, naming it and the topic', () => {
    expect(() => jsonConverter(() => 1, 'orders')).toThrow(
      /^The json converter cannot write a function to topic 'orders': JSON has no form for it/,
    );
    expect(() => jsonConverter(Symbol('s'), 'orders')).toThrow(/cannot write a symbol to topic 'orders'/);
    expect(() => jsonConverter({ toJSON: () => undefined }, 'orders')).toThrow(/cannot write an object to topic 'orders'/);
  });

  it('json writes bytes as base64 and NaN and ±Infinity as strings at any depth, as JsonConverter does', () => {
    const text = (v: unknown) => jsonConverter(v, 't')?.toString();
    expect(text({ a: NaN, b: [Infinity, -Infinity], c: 1.5 })).toBe('{"a":"NaN","b":["Infinity","-Infinity"],"c":1.5}');
    expect(text(NaN)).toBe('"NaN"');
    expect(text({ raw: Buffer.from('hi'), list: [new Uint8Array([0, 1])] })).toBe('{"raw":"aGk=","list":["AAE="]}');
    // A view into a larger buffer: only its own bytes.
    const pooled = Buffer.from('xxhiyy').subarray(2, 4);
    expect(text({ b: pooled })).toBe('{"b":"aGk="}');
    expect(text(new Uint8Array([0, 1]))).toBe('"AAE="');
    // Unchanged: a toJSON() is used, undefined properties are left out, class instances by their fields.
    expect(
      text({
        when: new Date(0),
        gone: undefined,
        p: new (class P {
          x = 1;
          y = NaN;
        })(),
      }),
    ).toBe('{"when":"1970-01-01T00:00:00.000Z","p":{"x":1,"y":"NaN"}}');
    expect(text({ own: { toJSON: () => 'mine' } })).toBe('{"own":"mine"}');
    // Functions and symbols are left out of objects, as JSON.stringify leaves them (a class's arrow-function fields).
    expect(
      text(
        new (class WithHandler {
          x = 1;
          onChange = () => this.x;
        })(),
      ),
    ).toBe('{"x":1}');
    expect(text({ s: Symbol('s'), n: 1 })).toBe('{"n":1}');
    // What a toJSON() gives is written as the rest: bytes as base64, NaN as "NaN".
    class Message {
      constructor(
        readonly id: number,
        readonly payload: Buffer,
      ) {}
      toJSON() {
        return { id: this.id, payload: this.payload, score: Number.NaN };
      }
    }
    expect(text({ m: new Message(1, Buffer.from('hi')) })).toBe('{"m":{"id":1,"payload":"aGk=","score":"NaN"}}');
    expect(text({ v: { toJSON: () => ({ n: Number.POSITIVE_INFINITY }) } })).toBe('{"v":{"n":"Infinity"}}');
    expect(() => text({ v: { toJSON: () => new Map() } })).toThrow(
      /what a toJSON\(\) in it gives holds a value JSON cannot write as it is: the value at key 'v' is an object of class Map, which JSON\.stringify writes as \{\}/,
    );
    expect(() => text({ v: { toJSON: () => ({ big: 1n }) } })).toThrow(
      /the value at key 'big' is the bigint 1n, which JSON\.stringify cannot write/,
    );
    // With the common BigInt.prototype.toJSON patch, a bigint is written as the patch gives.
    const prototype = BigInt.prototype as { toJSON?: () => string };
    prototype.toJSON = function (this: bigint) {
      return this.toString();
    };
    try {
      expect(text({ n: 10n })).toBe('{"n":"10"}');
    } finally {
      delete prototype.toJSON;
    }
    expect(() => text({ n: 10n })).toThrow(/\$\.n is the bigint 10n/);
    // Whatever its fields hold: toJSON() decides what is written.
    expect(text({ m: new Map([['a', 1]]), toJSON: () => 'ok' })).toBe('"ok"');
    // Bytes from another realm (a vm context), which instanceof Uint8Array misses.
    expect(text({ b: runInNewContext('new Uint8Array([104, 105])') })).toBe('{"b":"aGk="}');
    expect(text(runInNewContext('new Uint8Array([104, 105])'))).toBe('"aGk="');
  });

  it('json refuses, with its path, what JSON.stringify would write as another value or leave out', () => {
    const refused = (v: unknown) => () => jsonConverter(v, 'orders');
    expect(refused({ items: [{ tags: new Map([['a', 1]]) }] })).toThrow(
      /^The json converter cannot write an object to topic 'orders' as it is: \$\.items\[0\]\.tags is an object of class Map, which JSON\.stringify writes as \{\}: give an object \(Object\.fromEntries\) instead\. Accepted: /,
    );
    expect(refused(new Set([1]))).toThrow(
      /cannot write an object of class Set to topic 'orders' as it is: \$ is an object of class Set, which JSON\.stringify writes as \{\}: give an array \(Array\.from\)/,
    );
    expect(refused({ f: new Float64Array([1.5]) })).toThrow(
      /\$\.f is an object of class Float64Array, which JSON\.stringify writes as \{"0":1\.5\}/,
    );
    expect(refused({ e: new Error('boom') })).toThrow(/\$\.e is an object of class Error, which JSON\.stringify writes as \{\}/);
    expect(refused({ n: 12345678901234567890n })).toThrow(
      /\$\.n is the bigint 12345678901234567890n, which JSON\.stringify cannot write: give a string or a number/,
    );
    const cycle: Record<string, unknown> = { id: 1 };
    cycle.inner = { back: cycle };
    expect(refused(cycle)).toThrow(/\$\.inner\.back is \$ again \(a cycle\), which JSON cannot write/);
    let deep: unknown = 1;
    for (let i = 0; i < 1001; i++) deep = { d: deep };
    expect(refused(deep)).toThrow(/\$\.d\.d.*\.\.\..*\.d nests deeper than 1000 levels/);
  });

  it('string writes text and refuses objects with a clear message', () => {
    expect(stringConverter(42, 't')?.toString()).toBe('42');
    expect(() => stringConverter({}, 'orders')).toThrow(/cannot write an object to topic 'orders'/);
    expect(() => stringConverter(Object.create(null), 'orders')).toThrow(/cannot write an object to topic 'orders'/);
    expect(() => stringConverter([1], 'orders')).toThrow(/cannot write an array to topic 'orders'/);
    expect(() => stringConverter(new Date(0), 'orders')).toThrow(/cannot write an object of class Date to topic 'orders'/);
  });

  it('bytes passes bytes through and refuses anything else', () => {
    const b = Buffer.from([1, 2]);
    expect(bytesConverter(b, 't')).toBe(b);
    expect(bytesConverter(new Uint8Array([3]), 't')).toEqual(Buffer.from([3]));
    expect(() => bytesConverter('x', 't')).toThrow(
      /^The bytes converter cannot write a string to topic 't': it accepts Buffer and Uint8Array/,
    );
  });

  it("resolves Kafka Connect's class names", () => {
    expect(converterNamed('org.apache.kafka.connect.json.JsonConverter')).toBe(jsonConverter);
    expect(converterNamed('org.apache.kafka.connect.converters.ByteArrayConverter')).toBe(bytesConverter);
    expect(converterNamed('toString')).toBeUndefined();
  });
});
