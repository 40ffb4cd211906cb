import * as t from 'io-ts';
import { offsetCodec } from 'tributary-connect';
import { lsnText } from './lsn.js';

/** The source partition: the replication slot, whose position the offset is. */
export type CdcPartition = { slot: string };

/**
 * How far the task got, as a place to resume from.
 *
 * - `{ lsn }`: every transaction that committed before `lsn` was delivered (a heartbeat's
 *   offset, taken from the server's keepalive when nothing was pending).
 * - `{ lsn, changes }`: `lsn` is the commit LSN of a transaction of which the first `changes`
 *   row changes were delivered (a data record's offset).
 *
 * Either way a restart asks the server for the changes from `lsn` on and, with `changes`,
 * skips that many row changes of the transaction committing at `lsn`: nothing is lost and
 * nothing delivered before the offset is repeated.
 */
export type CdcOffset = { lsn: string; changes?: number };

const isCount = (u: unknown): u is number => typeof u === 'number' && Number.isSafeInteger(u) && u >= 1;
const changeCount = new t.Type<number, number, unknown>(
  'integer >= 1',
  isCount,
  (u, c) => (isCount(u) ? t.success(u) : t.failure(u, c)),
  (n) => n,
);

/**
 * Codec of the connector's partitions and offsets: a bad stored or submitted offset is
 * rejected with its path, e.g. `offset.lsn: expected LSN such as 0/16B3748, got 42`.
 */
export const cdcOffsets = offsetCodec<CdcPartition, CdcOffset>({
  partition: t.type({ slot: t.string }),
  offset: t.intersection([t.type({ lsn: lsnText }), t.partial({ changes: changeCount })]),
});
