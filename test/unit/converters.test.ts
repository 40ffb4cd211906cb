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
