import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bytesConverter, converterNamed, jsonConverter, stringConverter } from '../../src/runtime/converters.js';

describe('converters', () => {
  it('json writes compact JSON like JsonConverter with schemas.enable=false', () => {
    expect(jsonConverter({ a: 1, b: [true, null] }, 't')?.toString()).toBe('{"a":1,"b":[true,null]}');
    expect(jsonConverter(null, 't')).toBeNull();
    expect(jsonConverter(Buffer.from('hi'), 't')?.toString()).toBe('"aGk="');
  });

  it('string writes text and refuses objects with a clear message', () => {
    expect(stringConverter(42, 't')?.toString()).toBe('42');
    expect(() => stringConverter({}, 'orders')).toThrow(/cannot write a Object object to topic 'orders'/);
  });

  it('string and json write the bytes Buffer.from gives, and no value overwrites another', () => {
    // Lone surrogates, astral characters and lengths across the slab's size limit (about 5,461
    // UTF-16 units) and its end: every value kept is compared after all were written.
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: fc.constantFrom('a', 'é', '€', '\u{1F600}', '\ud800', '\udfff'), maxLength: 3000 }),
      fc.integer({ min: 5400, max: 5500 }).map((n) => '€'.repeat(n)),
    );
    fc.assert(
      fc.property(fc.array(text, { maxLength: 60 }), (texts) => {
        const written = texts.map((t) => [t, stringConverter(t, 't'), jsonConverter(t, 't')] as const);
        // equals(), not toEqual: a deep comparison of thousands of Buffers takes seconds.
        const wrong = written.filter(
          ([t, asString, asJson]) => !asString?.equals(Buffer.from(t)) || !asJson?.equals(Buffer.from(JSON.stringify(t))),
        );
        expect(wrong.map(([t]) => t)).toEqual([]);
      }),
      { numRuns: 100 },
    );
  });

  it('bytes passes bytes through and refuses anything else', () => {
    const b = Buffer.from([1, 2]);
    expect(bytesConverter(b, 't')).toBe(b);
    expect(bytesConverter(new Uint8Array([3]), 't')).toEqual(Buffer.from([3]));
    expect(() => bytesConverter('x', 't')).toThrow(/accepts Buffer and Uint8Array/);
  });

  it("resolves Kafka Connect's class names", () => {
    expect(converterNamed('org.apache.kafka.connect.json.JsonConverter')).toBe(jsonConverter);
    expect(converterNamed('org.apache.kafka.connect.converters.ByteArrayConverter')).toBe(bytesConverter);
    expect(converterNamed('toString')).toBeUndefined();
  });
});
