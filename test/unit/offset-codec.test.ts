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

  it('with exact, refuses keys the codec does not declare, by path at every depth, beside the other problems', () => {
    expect(codec.decodeOffset({ lsn: '0/1', txId: null, parts: [{ pos: 1 }], lnsx: 'x' }, { exact: true })).toEqual({
      ok: false,
      problems: ['offset.lnsx: unknown key (known: lsn, txId, parts)'],
    });
    const nested = codec.decodeOffset({ lsn: 7, txId: null, parts: [{ pos: 1 }, { pos: 2, extra: true }] }, { exact: true });
    expect(nested).toEqual({
      ok: false,
      problems: ['offset.parts[1].extra: unknown key (known: pos)', 'offset.lsn: expected string, got 7'],
    });
    expect(codec.decodePartition({ schema: 'public', table: 't', tabel: 'u' }, { exact: true })).toEqual({
      ok: false,
      problems: ['partition.tabel: unknown key (known: schema, table)'],
    });
    const exactValue = { lsn: '0/1', txId: 3, parts: [] };
    expect(codec.decodeOffset(exactValue, { exact: true })).toEqual({ ok: true, value: exactValue });
  });

  it('without exact, decodes a stored offset that carries a key the codec no longer declares', () => {
    expect(codec.decodeOffset({ lsn: '0/1', txId: null, parts: [], dropped: 1 }).ok).toBe(true);
  });

  it('with exact, knows the keys of partial, intersection, union, refinement, exact, readonly and record codecs', () => {
    const rich = offsetCodec({
      partition: t.intersection([t.type({ a: t.string }), t.partial({ b: t.number })]),
      offset: t.union([
        t.strict({ kind: t.literal('lsn'), lsn: t.string }),
        t.readonly(t.type({ kind: t.literal('pos'), pos: t.refinement(t.type({ n: t.number }), (p) => p.n >= 0) })),
        t.type({ kind: t.literal('map'), byTable: t.record(t.string, t.type({ n: t.number })) }),
      ]),
    });
    expect(rich.decodePartition({ a: 'x', b: 1 }, { exact: true }).ok).toBe(true);
    expect(rich.decodePartition({ a: 'x', c: 1 }, { exact: true })).toEqual({
      ok: false,
      problems: ['partition.c: unknown key (known: a, b)'],
    });
    expect(rich.decodeOffset({ kind: 'lsn', lsn: '0/1', lns: 'x' }, { exact: true })).toMatchObject({
      problems: ['offset.lns: unknown key (known: kind, lsn)'],
    });
    expect(rich.decodeOffset({ kind: 'pos', pos: { n: 1, m: 2 } }, { exact: true })).toMatchObject({
      problems: ['offset.pos.m: unknown key (known: n)'],
    });
    expect(rich.decodeOffset({ kind: 'map', byTable: { t1: { n: 1 }, t2: { n: 2, x: 0 } } }, { exact: true })).toMatchObject({
      problems: ['offset.byTable.t2.x: unknown key (known: n)'],
    });
    expect(rich.decodeOffset({ kind: 'map', byTable: { t1: { n: 1 } } }, { exact: true }).ok).toBe(true);
  });

  it('with exact, takes a union value whose keys a later member declares, when the member io-ts picks keeps them', () => {
    const growing = offsetCodec({
      partition: t.type({ f: t.string }),
      offset: t.union([t.type({ lsn: t.string }), t.type({ lsn: t.string, txId: t.number })]),
    });
    expect(growing.decodeOffset({ lsn: '0/1', txId: 7 }, { exact: true })).toEqual({ ok: true, value: { lsn: '0/1', txId: 7 } });
    expect(growing.decodeOffset({ lsn: '0/1', txid: 7 }, { exact: true })).toEqual({
      ok: false,
      problems: ['offset.txid: unknown key (known: lsn)'],
    });
    // t.strict strips what it does not declare: the decoded offset would lose txId, so it is refused.
    const stripping = offsetCodec({
      partition: t.type({ f: t.string }),
      offset: t.union([t.strict({ lsn: t.string }), t.type({ lsn: t.string, txId: t.number })]),
    });
    expect(stripping.decodeOffset({ lsn: '0/1', txId: 7 }, { exact: true })).toEqual({
      ok: false,
      problems: ['offset.txId: unknown key (known: lsn)'],
    });
  });

  it('with exact, takes the keys every member of an intersection declares under a key they share', () => {
    const shared = offsetCodec({
      partition: t.type({ f: t.string }),
      offset: t.intersection([t.type({ pos: t.type({ file: t.string }) }), t.type({ pos: t.type({ line: t.number }) })]),
    });
    expect(shared.decodeOffset({ pos: { file: 'a', line: 3 } }, { exact: true })).toEqual({
      ok: true,
      value: { pos: { file: 'a', line: 3 } },
    });
    expect(shared.decodeOffset({ pos: { file: 'a', line: 3, lnie: 4 } }, { exact: true })).toEqual({
      ok: false,
      problems: ['offset.pos.lnie: unknown key (known: file, line)'],
    });
  });

  it('with exact, refuses a typo beside the keys of an intersection with a union, and takes every valid variant', () => {
    // A common shape: keys every offset has, and the keys of one kind of position.
    const tagged = offsetCodec({
      partition: t.type({ f: t.string }),
      offset: t.intersection([
        t.type({ file: t.string }),
        t.union([t.type({ kind: t.literal('line'), line: t.number }), t.type({ kind: t.literal('byte'), pos: t.number })]),
        t.partial({ note: t.string }),
      ]),
    });
    expect(tagged.decodeOffset({ file: 'a', kind: 'line', line: 3 }, { exact: true }).ok).toBe(true);
    expect(tagged.decodeOffset({ file: 'a', kind: 'byte', pos: 9, note: 'x' }, { exact: true }).ok).toBe(true);
    expect(tagged.decodeOffset({ file: 'a', kind: 'line', line: 3, lnie: 4 }, { exact: true })).toEqual({
      ok: false,
      problems: ['offset.lnie: unknown key (known: file, kind, line, note)'],
    });
    const growing = offsetCodec({
      partition: t.type({ f: t.string }),
      offset: t.intersection([
        t.type({ file: t.string }),
        t.union([t.type({ a: t.number }), t.type({ a: t.number, b: t.number })]),
      ]),
    });
    expect(growing.decodeOffset({ file: 'x', a: 1, b: 2 }, { exact: true }).ok).toBe(true);
  });

  it('with exact, refuses keys named like Object.prototype members (constructor, toString, __proto__)', () => {
    for (const key of ['constructor', 'toString', '__proto__']) {
      const value = JSON.parse(`{"lsn": "0/1", "txId": null, "parts": [{"pos": 1, "${key}": 2}], "${key}": {"x": 1}}`);
      expect(codec.decodeOffset(value, { exact: true })).toEqual({
        ok: false,
        problems: [`offset.parts[0].${key}: unknown key (known: pos)`, `offset.${key}: unknown key (known: lsn, txId, parts)`],
      });
    }
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

  it("encodes a key named __proto__ as a key, not as the copy's prototype", () => {
    const byTable = offsetCodec({ partition: t.record(t.string, t.string), offset: t.type({ n: t.number }) });
    const encoded = byTable.encodePartition(JSON.parse('{"__proto__":"table_a","z":"x"}') as Record<string, string>);
    expect(JSON.stringify(encoded)).toBe('{"__proto__":"table_a","z":"x"}');
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
