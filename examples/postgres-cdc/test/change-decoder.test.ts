import type { Pgoutput } from 'pg-logical-replication';
import { describe, expect, it } from 'vitest';
import { cdcOffsets } from '../src/cdc-offsets.js';
import { ChangeDecoder, type RowChange } from '../src/change-decoder.js';
import { formatLsn, parseLsn } from '../src/lsn.js';

const orders: Pgoutput.MessageRelation = {
  tag: 'relation',
  relationOid: 1,
  schema: 'public',
  name: 'orders',
  replicaIdentity: 'default',
  columns: [],
  keyColumns: ['id'],
};
const audit: Pgoutput.MessageRelation = { ...orders, relationOid: 2, name: 'audit' };

const begin = (commitLsn: string, xid = 7): Pgoutput.MessageBegin => ({
  tag: 'begin',
  commitLsn,
  commitTime: 1_700_000_000_000_000n,
  xid,
});
const commit = (commitLsn: string, commitEndLsn: string): Pgoutput.MessageCommit => ({
  tag: 'commit',
  flags: 0,
  commitLsn,
  commitEndLsn,
  commitTime: 1_700_000_000_000_000n,
});
const insert = (id: number, relation = orders): Pgoutput.MessageInsert => ({ tag: 'insert', relation, new: { id } });

function decoder(resumeFrom: { lsn: string; changes?: number }) {
  const out: RowChange[] = [];
  const unknown: { name: string; oid: number }[] = [];
  const d = new ChangeDecoder({
    resumeFrom,
    tables: new Map([['public.orders', orders.relationOid]]),
    otherRelations: new Set([audit.relationOid]),
    publication: 'cdc',
    emit: (c) => out.push(c),
    unknownRelation: (r) => unknown.push(r),
  });
  return { d, out, unknown };
}

/** Feeds one transaction: BEGIN, the row messages, COMMIT. */
function transaction(d: ChangeDecoder, commitLsn: string, commitEnd: string, rows: Pgoutput.Message[]) {
  d.onMessage(parseLsn(commitLsn) - 0x100n, begin(commitLsn));
  for (const [i, m] of rows.entries()) d.onMessage(parseLsn(commitLsn) - 0x100n + BigInt(i * 8), m);
  d.onMessage(parseLsn(commitEnd), commit(commitLsn, commitEnd));
}

describe('ChangeDecoder', () => {
  it('gives each row change its transaction commit LSN and its index in it as offset', () => {
    const { d, out } = decoder({ lsn: '0/1000' });
    transaction(d, '0/2000', '0/2030', [insert(1), { tag: 'update', relation: orders, key: null, old: null, new: { id: 1 } }]);
    transaction(d, '0/3000', '0/3030', [{ tag: 'delete', relation: orders, key: { id: 1 }, old: null }]);
    expect(out.map((c) => [c.op, c.offset, c.before, c.after])).toEqual([
      ['c', { lsn: '0/2000', changes: 1 }, null, { id: 1 }],
      ['u', { lsn: '0/2000', changes: 2 }, null, { id: 1 }],
      ['d', { lsn: '0/3000', changes: 1 }, { id: 1 }, null],
    ]);
    expect(out[0]?.commitTime).toBe(1_700_000_000_000);
  });

  it('skips the changes delivered before a restart in the transaction committing at the offset', () => {
    const { d, out } = decoder({ lsn: '0/2000', changes: 2 });
    transaction(d, '0/2000', '0/2030', [insert(1), insert(2), insert(3)]);
    transaction(d, '0/3000', '0/3030', [insert(4)]);
    expect(out.map((c) => c.after?.id)).toEqual([3, 4]);
    expect(out[0]?.offset).toEqual({ lsn: '0/2000', changes: 3 });
  });

  it('counts changes of tables it does not capture, so a resumed index means the same change', () => {
    const first = decoder({ lsn: '0/1000' });
    transaction(first.d, '0/2000', '0/2030', [insert(1), insert(9, audit), insert(2)]);
    expect(first.out.map((c) => c.offset.changes)).toEqual([1, 3]);
    const resumed = decoder({ lsn: '0/2000', changes: 1 });
    transaction(resumed.d, '0/2000', '0/2030', [insert(1), insert(9, audit), insert(2)]);
    expect(resumed.out.map((c) => c.after?.id)).toEqual([2]);
  });

  it('drops the changes of a relation neither captured nor in the publication at start, and reports it once', () => {
    const { d, out, unknown } = decoder({ lsn: '0/1000' });
    const staging: Pgoutput.MessageRelation = { ...orders, relationOid: 3, name: 'staging' };
    transaction(d, '0/2000', '0/2030', [insert(1), insert(2, staging), insert(3, staging), insert(4)]);
    transaction(d, '0/3000', '0/3030', [insert(5, staging), insert(6, audit)]);
    expect(out.map((c) => [c.after?.id, c.offset.changes])).toEqual([
      [1, 1],
      [4, 4],
    ]);
    expect(unknown).toEqual([{ name: 'public.staging', oid: 3 }]);
  });

  it('fails on a change under a captured name whose relation is not the one captured at start', () => {
    const { d, out } = decoder({ lsn: '0/1000' });
    const recreated: Pgoutput.MessageRelation = { ...orders, relationOid: 4 };
    expect(() => transaction(d, '0/2000', '0/2030', [insert(1), insert(2, recreated)])).toThrow(
      /sent a change of public.orders as relation OID 4, but the table captured at start is relation OID 1: it was dropped and re-created/,
    );
    expect(out.map((c) => c.after?.id)).toEqual([1]);
  });

  it('resumes from a heartbeat offset with the whole transaction committing at it', () => {
    const { d, out } = decoder({ lsn: '0/2000' });
    transaction(d, '0/2000', '0/2030', [insert(1), insert(2)]);
    expect(out.map((c) => c.after?.id)).toEqual([1, 2]);
  });

  it('never hands on a transaction that committed before the resume position', () => {
    const { d, out } = decoder({ lsn: '0/2000', changes: 1 });
    transaction(d, '0/1F00', '0/1F30', [insert(1)]);
    transaction(d, '0/2100', '0/2130', [insert(2)]);
    expect(out.map((c) => c.after?.id)).toEqual([2]);
  });

  it('moves the idle position with keepalives between transactions and with commit ends, never inside one', () => {
    const { d } = decoder({ lsn: '0/1000' });
    expect(d.idlePosition).toBe(0x1000n);
    d.onKeepalive(0x1800n);
    expect(d.idlePosition).toBe(0x1800n);
    d.onMessage(0x1900n, begin('0/2000'));
    d.onKeepalive(0x1a00n);
    expect(d.inTransaction).toBe(true);
    expect(d.idlePosition).toBe(0x1800n);
    d.onMessage(0x2030n, commit('0/2000', '0/2030'));
    expect(d.inTransaction).toBe(false);
    expect(d.idlePosition).toBe(0x2030n);
    d.onKeepalive(0x2000n);
    expect(d.idlePosition).toBe(0x2030n);
  });
});

describe('LSN offsets', () => {
  it('compare across the 32-bit boundary and print as PostgreSQL does', () => {
    expect(parseLsn('1/0') > parseLsn('0/FFFFFFFF')).toBe(true);
    expect(formatLsn(parseLsn('0/016b3748'))).toBe('0/16B3748');
    expect(formatLsn(parseLsn('0000000A/0000FF00'))).toBe('A/FF00');
    expect(() => parseLsn('16B3748')).toThrow(/Not a PostgreSQL LSN/);
  });

  it('reject an offset whose lsn is not an LSN, naming the path', () => {
    expect(cdcOffsets.decodeOffset({ lsn: '0/16B3748', changes: 2 })).toEqual({
      ok: true,
      value: { lsn: '0/16B3748', changes: 2 },
    });
    const bad = cdcOffsets.decodeOffset({ lsn: 42 });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.problems).toEqual(['offset.lsn: expected LSN such as 0/16B3748, got 42']);
    const count = cdcOffsets.decodeOffset({ lsn: '0/1', changes: 0 });
    if (count.ok) throw new Error('changes 0 should not decode');
    expect(count.problems).toEqual(['offset.changes: expected integer >= 1, got 0']);
  });
});
