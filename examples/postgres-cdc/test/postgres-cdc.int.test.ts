import { setTimeout as sleep } from 'node:timers/promises';
import type { BoundedBuffer, TributaryError } from 'tributary-connect';
import { MockRuntime } from 'tributary-connect/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type CdcOffset,
  type CdcPartition,
  type ChangeValue,
  type PostgresCdcConfig,
  PostgresCdcTask,
  postgresCdcConfig,
} from '../src/index.js';
import { parseLsn } from '../src/lsn.js';
import { eventually } from './eventually.js';
import { type PgCluster, startPgCluster } from './pg-cluster.js';

type Run = MockRuntime<CdcPartition, CdcOffset, PostgresCdcConfig>;

let cluster: PgCluster;
const runs: Run[] = [];
let slotSeq = 0;

beforeAll(async () => {
  cluster = await startPgCluster();
  await cluster.query(`
    CREATE TABLE orders (id int PRIMARY KEY, item text NOT NULL, qty int NOT NULL);
    CREATE TABLE audit (id bigserial PRIMARY KEY, payload text);`);
}, 120_000);

afterEach(async () => {
  for (const run of runs.splice(0)) if (run.status.state !== 'FAILED' && run.status.state !== 'STOPPED') await run.stop();
});

afterAll(async () => {
  await cluster?.stop();
});

/** A fresh slot and publication name for each test, so tests do not see each other's changes. */
function names() {
  slotSeq++;
  return { slot: `cdc_${slotSeq}`, publication: `cdc_pub_${slotSeq}` };
}

function config(extra: Record<string, unknown>): PostgresCdcConfig {
  const parsed = postgresCdcConfig.parse({
    'connection.string': cluster.connectionString(),
    tables: 'orders',
    'topic.prefix': 'shop',
    ...extra,
  });
  if (!parsed.ok) throw new Error(parsed.problems.map((p) => p.message).join('; '));
  return parsed.value;
}

async function start(
  extra: Record<string, unknown>,
  options: {
    committedOffsets?: Array<{ partition: CdcPartition; offset: CdcOffset }>;
    connectorConfig?: Record<string, unknown>;
  } = {},
): Promise<Run> {
  const run = await MockRuntime.start(PostgresCdcTask, {
    config: config(extra),
    committedOffsets: options.committedOffsets,
    connectorConfig: { 'heartbeat.topic': 'beats', ...options.connectorConfig },
    workerConfig: { 'offset.flush.interval.ms': 3_600_000 },
  });
  runs.push(run);
  return run;
}

async function sql(text: string): Promise<string> {
  await cluster.query(text);
  return (await cluster.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn'))[0]!.lsn;
}

async function slotRow(slot: string) {
  const rows = await cluster.query<{ confirmed: string; active: boolean }>(
    'SELECT confirmed_flush_lsn::text AS confirmed, active FROM pg_replication_slots WHERE slot_name = $1',
    [slot],
  );
  return rows[0];
}

/** The error of a task that failed, or a test failure saying what state it is in instead. */
function failure(run: Run): TributaryError {
  const status = run.status;
  if (status.state !== 'FAILED') throw new Error(`expected the task to have failed, it is ${status.state}`);
  return status.error as TributaryError;
}

const values = (run: Run) => run.records('shop.public.orders').map((r) => r.value as ChangeValue);

describe('postgres-cdc task', () => {
  it('turns inserts, updates and deletes into keyed records whose offsets follow the commit order', async () => {
    const { slot, publication } = names();
    const run = await start({ 'slot.name': slot, 'publication.name': publication });
    const after1 = await sql("BEGIN; INSERT INTO orders VALUES (1, 'tea', 2), (2, 'jam', 1); COMMIT;");
    const after2 = await sql("UPDATE orders SET qty = 5 WHERE id = 1; INSERT INTO audit(payload) VALUES ('not captured');");
    const after3 = await sql('DELETE FROM orders WHERE id = 2');
    await eventually('four change records', () => run.records('shop.public.orders').length >= 4, { runs: [run] });

    const records = run.records('shop.public.orders');
    expect(records.map((r) => [r.value && (r.value as ChangeValue).op, r.key])).toEqual([
      ['c', { id: 1 }],
      ['c', { id: 2 }],
      ['u', { id: 1 }],
      ['d', { id: 2 }],
    ]);
    expect(values(run).map((v) => [v.before, v.after])).toEqual([
      [null, { id: 1, item: 'tea', qty: 2 }],
      [null, { id: 2, item: 'jam', qty: 1 }],
      [null, { id: 1, item: 'tea', qty: 5 }],
      [{ id: 2 }, null],
    ]);
    const offsets = records.map((r) => r.sourceOffset);
    expect(offsets.map((o) => o.changes)).toEqual([1, 2, 1, 1]);
    expect(offsets[0]?.lsn).toBe(offsets[1]?.lsn);
    const [c1, , c2, c3] = offsets.map((o) => parseLsn(o.lsn));
    expect(c1! < parseLsn(after1) && parseLsn(after1) <= c2! && c2! < parseLsn(after2) && parseLsn(after2) <= c3!).toBe(true);
    expect(c3! < parseLsn(after3)).toBe(true);
    expect(values(run).every((v) => parseLsn(v.source.lsn) < parseLsn(v.source.commit_lsn))).toBe(true);
    expect(records.every((r) => r.sourcePartition.slot === slot)).toBe(true);
    expect(run.records().some((r) => r.topic.includes('audit'))).toBe(false);
  });

  it('resumes after a restart from the committed offset, losing nothing and repeating nothing before it', async () => {
    const { slot, publication } = names();
    const run = await start({ 'slot.name': slot, 'publication.name': publication });
    await sql("BEGIN; INSERT INTO orders VALUES (10, 'a', 1), (11, 'b', 1), (12, 'c', 1); COMMIT;");
    await sql("BEGIN; INSERT INTO orders VALUES (13, 'd', 1); UPDATE orders SET qty = 2 WHERE id = 10; COMMIT;");
    // Kafka acknowledges only the first two records: the flush commits the middle of a transaction.
    let acked = 0;
    run.holdAcks(() => ++acked > 2);
    await eventually('five records sent', () => run.inFlight === 3, { runs: [run] });
    await run.flush();
    const committed = await run.committedOffset({ slot });
    expect(committed).toEqual({ lsn: run.records()[0]?.sourceOffset.lsn, changes: 2 });

    await run.restart();
    await sql("INSERT INTO orders VALUES (14, 'e', 1)");
    await eventually('the changes after the committed offset', () => values(run).length >= 6, { runs: [run] });
    const seen = values(run).map((v) => `${v.op}${v.after?.id}`);
    // before the restart: 10, 11 acknowledged; after: the rest, in order, once.
    expect(seen).toEqual(['c10', 'c11', 'c12', 'c13', 'u10', 'c14']);
    await run.flush();
    expect((await run.committedOffset({ slot }))?.lsn).toBe(run.records().at(-1)?.sourceOffset.lsn);
  });

  it('resumes from a heartbeat offset with only the changes committed after it', async () => {
    const { slot, publication } = names();
    const run = await start(
      { 'slot.name': slot, 'publication.name': publication },
      { connectorConfig: { 'heartbeat.interval.ms': 1000 } },
    );
    await sql("INSERT INTO orders VALUES (20, 'x', 1)");
    const noise = await sql("INSERT INTO audit(payload) SELECT repeat('n', 500) FROM generate_series(1, 200)");
    const beat = await eventually(
      'a heartbeat past the unrelated writes',
      () => run.heartbeats.find((h) => parseLsn(h.sourceOffset.lsn) >= parseLsn(noise)),
      { runs: [run] },
    );
    await run.flush();
    expect(await run.committedOffset({ slot })).toEqual(run.heartbeats.at(-1)?.sourceOffset);
    expect(beat.sourceOffset.changes).toBeUndefined();
    await run.restart();
    await sql("INSERT INTO orders VALUES (21, 'y', 1)");
    await eventually('the new change', () => values(run).length >= 2, { runs: [run] });
    await run.advanceBy(2000);
    expect(values(run).map((v) => v.after?.id)).toEqual([20, 21]);
  });

  it('pauses the replication stream while its queue is full and loses nothing when it resumes', async () => {
    const { slot, publication } = names();
    const run = await start({ 'slot.name': slot, 'publication.name': publication, 'max.queue.size': 50 });
    const buffer = (run.task as unknown as { buffer: BoundedBuffer<unknown> }).buffer;
    run.pause();
    await sql("INSERT INTO orders SELECT g, repeat('p', 100), 1 FROM generate_series(1000, 5999) AS g");
    await eventually('the queue to fill up', () => buffer.isPaused, { runs: [run] });
    await sleep(500);
    // The socket is paused: the server holds the rest (one network read may overshoot the capacity).
    expect(buffer.size).toBeLessThan(2000);
    run.resume();
    await eventually('all 5000 changes', () => values(run).length >= 5000, { runs: [run], timeoutMs: 60_000 });
    expect(values(run).map((v) => v.after?.id)).toEqual(Array.from({ length: 5000 }, (_, i) => 1000 + i));
    await cluster.query('DELETE FROM orders WHERE id >= 1000');
  });

  it('fails to start with a clear error when the slot is missing but an offset was committed', async () => {
    const { slot, publication } = names();
    const run = await start(
      { 'slot.name': slot, 'publication.name': publication },
      { committedOffsets: [{ partition: { slot }, offset: { lsn: '0/1000000' } }] },
    );
    const error = failure(run);
    expect(error.code).toBe('TASK_START_FAILED');
    expect(error.message).toContain(`replication slot "${slot}" does not exist, but offset {"lsn":"0/1000000"} was committed`);
    expect(await slotRow(slot)).toBeUndefined();
  });

  it('fails to start when the slot is missing and slot.create is false', async () => {
    const { slot, publication } = names();
    const run = await start({ 'slot.name': slot, 'publication.name': publication, 'slot.create': false });
    expect(failure(run).code).toBe('TASK_START_FAILED');
    expect(failure(run).message).toContain(`replication slot "${slot}" does not exist and slot.create is false`);
  });

  it('fails to start when the slot has confirmed past the committed offset', async () => {
    const { slot, publication } = names();
    await cluster.query(`CREATE PUBLICATION ${publication} FOR TABLE orders`);
    const created = (
      await cluster.query<{ lsn: string }>(`SELECT lsn::text FROM pg_create_logical_replication_slot($1, 'pgoutput')`, [slot])
    )[0]!.lsn;
    await sql("INSERT INTO orders VALUES (30, 'lost', 1)");
    await cluster.query('SELECT pg_replication_slot_advance($1, pg_current_wal_lsn())', [slot]);
    const run = await start(
      { 'slot.name': slot, 'publication.name': publication },
      { committedOffsets: [{ partition: { slot }, offset: { lsn: created } }] },
    );
    expect(failure(run).code).toBe('TASK_START_FAILED');
    expect(failure(run).message).toMatch(
      /the committed offset \(lsn .*\) is behind replication slot .*the server no longer has the changes in between/,
    );
  });

  it('fails to start when the committed offset is ahead of the server WAL', async () => {
    const { slot, publication } = names();
    await cluster.query(`CREATE PUBLICATION ${publication} FOR TABLE orders`);
    await cluster.query(`SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, [slot]);
    const run = await start(
      { 'slot.name': slot, 'publication.name': publication },
      { committedOffsets: [{ partition: { slot }, offset: { lsn: 'FF/0' } }] },
    );
    expect(failure(run).code).toBe('TASK_START_FAILED');
    expect(failure(run).message).toContain("the committed offset (lsn FF/0) is ahead of the server's WAL");
  });

  it('sends heartbeats carrying the server position while the captured tables are idle', async () => {
    const { slot, publication } = names();
    const run = await start(
      { 'slot.name': slot, 'publication.name': publication },
      { connectorConfig: { 'heartbeat.interval.ms': 1000 } },
    );
    await sql("INSERT INTO orders VALUES (40, 'once', 1)");
    await eventually('the change', () => values(run).length === 1, { runs: [run] });
    const dataLsn = parseLsn(run.dataRecords[0]!.sourceOffset.lsn);
    const marks: string[] = [];
    for (let i = 0; i < 3; i++) {
      const mark = await sql("INSERT INTO audit(payload) SELECT repeat('n', 500) FROM generate_series(1, 100)");
      marks.push(mark);
      await eventually(
        `a heartbeat at or past ${mark}`,
        () => run.heartbeats.some((h) => parseLsn(h.sourceOffset.lsn) >= parseLsn(mark)),
        {
          runs: [run],
        },
      );
    }
    const beats = run.heartbeats.map((h) => parseLsn(h.sourceOffset.lsn));
    expect(beats.every((lsn, i) => lsn > dataLsn && (i === 0 || lsn > beats[i - 1]!))).toBe(true);
    expect(run.heartbeats.every((h) => h.topic === 'beats' && h.sourcePartition.slot === slot)).toBe(true);
    expect(values(run)).toHaveLength(1);
    await run.flush();
    const committed = await run.committedOffset({ slot });
    expect(parseLsn(committed!.lsn)).toBeGreaterThanOrEqual(parseLsn(marks.at(-1)!));
    await eventually('the slot to confirm the heartbeat offset', async () => (await slotRow(slot))?.confirmed === committed!.lsn);
  });

  it('reports as source lag the WAL between the server position and the slot confirmed_flush_lsn', async () => {
    const { slot, publication } = names();
    const run = await start({ 'slot.name': slot, 'publication.name': publication });
    await run.flush();
    const lag = () => run.metrics().sourceLag;
    expect(lag()?.unit).toBe('bytes');
    // Writes the slot need not send (audit is not published) and no heartbeats: the lag grows by them.
    const before = lag()?.position ?? 0;
    const from = await sql('SELECT 1');
    const to = await sql("INSERT INTO audit(payload) SELECT repeat('n', 500) FROM generate_series(1, 300)");
    await run.flush();
    const written = Number(
      (await cluster.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::bigint::text AS d', [to, from]))[0]!.d,
    );
    const rows = await cluster.query<{ d: string }>(
      'SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint::text AS d FROM pg_replication_slots WHERE slot_name = $1',
      [slot],
    );
    expect(lag()!.position).toBeGreaterThanOrEqual(before + written);
    // What the task reported is what the server says (nothing was written between the two reads but WAL of its own).
    expect(Math.abs(lag()!.position - Number(rows[0]!.d))).toBeLessThan(64 * 1024);
  });

  it('confirms to the slot only the LSN of the committed offset, never beyond it', async () => {
    const { slot, publication } = names();
    const run = await start(
      { 'slot.name': slot, 'publication.name': publication },
      { connectorConfig: { 'heartbeat.interval.ms': 1000 } },
    );
    const startConfirmed = (await slotRow(slot))!.confirmed;
    await sql("INSERT INTO orders VALUES (50, 'acked', 1)");
    await eventually('the first change', () => values(run).length === 1, { runs: [run] });
    run.holdAcks((r) => !r.heartbeat);
    await sql("INSERT INTO orders VALUES (51, 'held', 1)");
    // Heartbeats keep coming after the held record, with positions far past it.
    const noise = await sql("INSERT INTO audit(payload) SELECT repeat('n', 500) FROM generate_series(1, 300)");
    await eventually(
      'a heartbeat behind the held record',
      () => run.heartbeats.some((h) => parseLsn(h.sourceOffset.lsn) >= parseLsn(noise)),
      { runs: [run] },
    );

    await run.flush();
    const committed = await run.committedOffset({ slot });
    expect(committed).toEqual(run.dataRecords[0]?.sourceOffset);
    await eventually('the slot to confirm the committed LSN', async () => (await slotRow(slot))?.confirmed === committed!.lsn, {
      runs: [run],
    });
    expect(parseLsn(committed!.lsn)).toBeGreaterThan(parseLsn(startConfirmed));
    // Time passes, heartbeats and keepalive replies go on: the slot stays at the committed LSN.
    for (let i = 0; i < 5; i++) {
      await run.advanceBy(1000);
      await run.flush();
      expect((await slotRow(slot))?.confirmed).toBe(committed!.lsn);
    }

    await run.releaseAcks();
    await run.flush();
    const after = await run.committedOffset({ slot });
    expect(after).toEqual(run.heartbeats.at(-1)?.sourceOffset);
    await eventually('the slot to confirm the new committed LSN', async () => (await slotRow(slot))?.confirmed === after!.lsn);
  });

  it('keeps the server text of dates, times and JSON, whatever the worker time zone', async () => {
    const { slot, publication } = names();
    const zone = process.env.TZ;
    process.env.TZ = 'Europe/Berlin';
    try {
      await cluster.query(`CREATE TABLE typed (id int PRIMARY KEY, d date, t time, ts timestamp, tstz timestamptz,
        ttz timetz, j jsonb, js json, ds date[], n int8)`);
      const run = await start({ tables: 'typed', 'slot.name': slot, 'publication.name': publication });
      await cluster.query(`INSERT INTO typed VALUES (1, '2024-01-15', '10:00:00.123456',
        '2024-01-15 10:00:00.123456', '2024-01-15 10:00:00.123456+00', '10:00:00.5+02', '{"id": 12345678901234567890}',
        '{"a": 1.10}', '{2024-01-15,2024-02-29}', 9007199254740993)`);
      await eventually('the change', () => run.records('shop.public.typed').length === 1, { runs: [run] });
      const after = (run.records('shop.public.typed')[0]!.value as ChangeValue).after;
      // The walsender prints timestamptz in the server's TimeZone, as a plain session does.
      const tstz = (await cluster.query<{ v: string }>('SELECT tstz::text AS v FROM typed'))[0]!.v;
      expect(after).toEqual({
        id: 1,
        d: '2024-01-15',
        t: '10:00:00.123456',
        ts: '2024-01-15 10:00:00.123456',
        tstz,
        ttz: '10:00:00.5+02',
        j: '{"id": 12345678901234567890}',
        js: '{"a": 1.10}',
        ds: ['2024-01-15', '2024-02-29'],
        n: '9007199254740993',
      });
    } finally {
      process.env.TZ = zone;
      if (zone === undefined) delete process.env.TZ;
    }
  });
});
