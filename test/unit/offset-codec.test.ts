import * as t from 'io-ts';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/api/canonical-json.js';
import { offsetCodec } from '../../src/api/offset-codec.js';

const codec = offsetCodec({
  partition: t.type({ schema: t.string, table: t.string }),
  offset: t.type({ lsn: t.string, txId: t.union([t.number, t.null]), parts: t.array(t.type({ pos: t.number })) }),
});

describe('offsetCodec', () => {
  it('reports each problem with its io-ts path, the expected type and the value', () => {
    const r = codec.decodeOffset({ lsn: 42, txId: 'x', parts: [{ pos: 1 }, { pos: 'two' }] });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.problems).toContain('offset.lsn: expected string, got 42');
    expect(r.problems.some((p) => p.startsWith('offset.txId: expected'))).toBe(true);
    expect(r.problems).toContain('offset.parts[1].pos: expected number, got "two"');
  });

  it('says what is missing', () => {
    const r = codec.decodePartition({ schema: 'public' });
    expect(r).toEqual({ ok: false, problems: ['partition.table: expected string, got nothing'] });
  });

  it('rejects a value that is not an object', () => {
    const r = codec.decodeOffset('0/16B3748');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems[0]).toMatch(/^offset: expected .*got "0\/16B3748"/);
  });

  it('encodes with keys in sorted order at every depth, whatever order they were built in', () => {
    const a = codec.encodePartition({ table: 'orders', schema: 'public' });
    const b = codec.encodePartition({ schema: 'public', table: 'orders' });
    expect(JSON.stringify(a)).toBe('{"schema":"public","table":"orders"}');
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(JSON.stringify(codec.encodeOffset({ txId: null, parts: [{ pos: 1 }], lsn: '0/1' }))).toBe(
      '{"lsn":"0/1","parts":[{"pos":1}],"txId":null}',
    );
  });

  it('round-trips', () => {
    const offset = { lsn: '0/16B3748', txId: 7, parts: [] };
    const decoded = codec.decodeOffset(JSON.parse(JSON.stringify(codec.encodeOffset(offset))));
    expect(decoded).toEqual({ ok: true, value: offset });
  });

  it('refuses codecs that do not encode to an object', () => {
    const bad = offsetCodec({ partition: t.string, offset: t.number });
    expect(() => bad.encodePartition('x')).toThrow(/must encode to a JSON object/);
  });
});
