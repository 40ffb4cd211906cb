import * as t from 'io-ts';

const LSN_TEXT = /^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}$/;

/** True for PostgreSQL's text form of a WAL position, e.g. `'0/16B3748'`. */
export function isLsn(text: unknown): text is string {
  return typeof text === 'string' && LSN_TEXT.test(text);
}

/**
 * A WAL position as a number, for comparing: `'0/16B3748'` → `0x16B3748n`.
 * Throws a RangeError for anything that is not an LSN's text form.
 *
 * @example
 * ```ts
 * parseLsn('1/0') > parseLsn('0/FFFFFFFF'); // true
 * ```
 */
export function parseLsn(text: string): bigint {
  if (!isLsn(text)) throw new RangeError(`Not a PostgreSQL LSN: ${JSON.stringify(text)} (expected e.g. '0/16B3748')`);
  const [high, low] = text.split('/') as [string, string];
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

/**
 * PostgreSQL's text form of a WAL position, as `pg_current_wal_lsn()` prints it: upper-case
 * hex, no padding.
 *
 * @example
 * ```ts
 * formatLsn(0x16B3748n); // '0/16B3748'
 * ```
 */
export function formatLsn(lsn: bigint): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** The larger of two positions. */
export function maxLsn(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

/** io-ts codec of an LSN in its text form; a bad one decodes to `expected LSN such as 0/16B3748`. */
export const lsnText = new t.Type<string, string, unknown>(
  'LSN such as 0/16B3748',
  isLsn,
  (u, c) => (isLsn(u) ? t.success(u) : t.failure(u, c)),
  (s) => s,
);
