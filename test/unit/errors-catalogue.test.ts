import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ERROR_CODES,
  isTributaryError,
  OffsetDecodeError,
  TributaryError,
  toTributaryError,
  traceOf,
} from '../../src/api/errors.js';

const catalogue = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
const rows = [...catalogue.matchAll(/^\| `([A-Z_]+)` \| (yes|no) \|/gm)].map((m) => ({ code: m[1], retriable: m[2] === 'yes' }));

describe('error catalogue (docs/errors.md)', () => {
  it('lists exactly the codes in ERROR_CODES, each with its retriable flag', () => {
    expect(rows.map((r) => r.code).sort()).toEqual(Object.keys(ERROR_CODES).sort());
    for (const row of rows) expect(row.retriable).toBe(ERROR_CODES[row.code as keyof typeof ERROR_CODES].retriable);
  });
});

describe('TributaryError', () => {
  it('carries a literal code, the retriable flag of its code and the cause', () => {
    const cause = new Error('socket closed');
    const e = new TributaryError('OFFSET_FLUSH_FAILED', 'flush failed', { cause });
    expect(e.code).toBe('OFFSET_FLUSH_FAILED');
    expect(e.retriable).toBe(true);
    expect(e.cause).toBe(cause);
    expect(isTributaryError(e)).toBe(true);
    expect(isTributaryError(new Error('x'))).toBe(false);
  });

  it('is recognised across two copies of the package through its Symbol.for brand', () => {
    const foreign = Object.assign(new Error('from another copy'), { [Symbol.for('tributary.error')]: true, code: 'SEND_FAILED' });
    expect(isTributaryError(foreign)).toBe(true);
  });

  it('normalises unknown throwables once, keeping the original as cause', () => {
    const e = toTributaryError('plain string', 'POLL_FAILED', 'poll() failed');
    expect(e.message).toBe('poll() failed: "plain string"');
    expect(e.cause).toBe('plain string');
    const same = new OffsetDecodeError('c', { p: 1 }, ['offset.n: expected number, got "x"']);
    expect(toTributaryError(same, 'POLL_FAILED', 'x')).toBe(same);
  });

  it('shows causes in the trace', () => {
    const e = new TributaryError('SEND_FAILED', 'outer', { cause: new Error('inner') });
    expect(traceOf(e)).toMatch(/TributaryError: outer[\s\S]*Caused by: Error: inner/);
  });
});
