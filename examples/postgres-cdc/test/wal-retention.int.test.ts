/**
 * The headline demonstration: the captured table idle, another table written continuously.
 * Two tasks read the same server at the same time, each from its own slot: one with heartbeats,
 * one without. Every series is read from the tasks' own metrics (`run.metrics()`, the figures
 * `GET /metrics` exports), never from a query of ours: the WAL each slot holds unconfirmed
 * (`sourceLag.position`, exported as `tributary_source_lag_position{unit="bytes"}`: bytes from
 * `pg_current_wal_lsn()` to the slot's `confirmed_flush_lsn`), the time behind where PostgreSQL
 * measures it (`sourceLag.timeMs`, `tributary_source_lag_seconds`), and the age of the
 * committed offset (`offsetAgeMs`, `tributary_offset_age_seconds`). With heartbeats the
 * unconfirmed WAL stays bounded; without, it grows with every byte written.
 *
 * `PG_CDC_DEMO_SECONDS` sets how long the unrelated writes go on (default 30, three times the
 * bound the test puts on the run with heartbeats; the README's chart is of a 60 s run);
 * `PG_CDC_DEMO_OUT` names a JSON file to write the series to (see scripts/wal-chart.ts).
 */
import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { MockRuntime } from 'tributary-connect/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CdcOffset, type CdcPartition, type PostgresCdcConfig, PostgresCdcTask, postgresCdcConfig } from '../src/index.js';
import { parseLsn } from '../src/lsn.js';
import { type PgCluster, startPgCluster } from './pg-cluster.js';

type Run = MockRuntime<CdcPartition, CdcOffset, PostgresCdcConfig>;

/** What one task's metrics say about its slot at one moment. */
interface SlotSample {
  /** WAL bytes the slot holds unconfirmed: the source-lag metric's position (0 before its first report). */
  readonly unconfirmed: number;
  /** The source-lag metric's time behind in ms (`flush_lag` of the slot's WAL sender), null while PostgreSQL does not measure it. */
  readonly behindMs: number | null;
  /** Milliseconds since the task's committed offset last advanced (the offset-age metric). */
  readonly offsetAgeMs: number;
}

/** One sample: seconds since the writes began, and per slot what its task's metrics showed. */
interface WalSample {
  readonly t: number;
  readonly on: SlotSample;
  readonly off: SlotSample;
  readonly phase: 'writing' | 'after';
}

const SECONDS = Number(process.env.PG_CDC_DEMO_SECONDS ?? 30);
const SAMPLE_EVERY_MS = 3000;
const HEARTBEAT_MS = 1000;
const FLUSH_MS = 2000;
const MB = 1024 * 1024;

let cluster: PgCluster;
const runs: Run[] = [];

beforeAll(async () => {
  // A short wal_sender_timeout makes the server ask for status replies every few seconds,
  // so the run also shows that answering them never confirms more than was committed.
  cluster = await startPgCluster({ settings: { wal_sender_timeout: "'10s'" } });
  await cluster.query(`
    CREATE TABLE captured (id int PRIMARY KEY, v text);
    CREATE TABLE noise (id bigserial PRIMARY KEY, payload text);
    CREATE PUBLICATION demo FOR TABLE captured;`);
}, 120_000);

afterAll(async () => {
  for (const run of runs) if (run.status.state === 'RUNNING') await run.stop();
  await cluster?.stop();
});

async function startTask(slot: string, heartbeatMs: number): Promise<Run> {
  const parsed = postgresCdcConfig.parse({
    'connection.string': cluster.connectionString(),
    tables: 'captured',
    'topic.prefix': 'demo',
    'slot.name': slot,
    'publication.name': 'demo',
  });
  if (!parsed.ok) throw new Error(parsed.problems.map((p) => p.message).join('; '));
  const run = await MockRuntime.start(PostgresCdcTask, {
    config: parsed.value,
    connectorConfig: { 'heartbeat.interval.ms': heartbeatMs, 'heartbeat.topic': 'demo-heartbeats' },
    workerConfig: { 'offset.flush.interval.ms': FLUSH_MS },
    startTime: Date.now(),
  });
  runs.push(run);
  if (run.status.state !== 'RUNNING') throw new Error(`task on ${slot} did not start: ${JSON.stringify(run.status)}`);
  return run;
}

/** Slot positions seen ahead of what the task had committed: must stay empty. */
const overConfirmed: string[] = [];

/** What the task's metrics say about its slot now. */
function slotSample(run: Run): SlotSample {
  const m = run.metrics();
  return { unconfirmed: m.sourceLag?.position ?? 0, behindMs: m.sourceLag?.timeMs ?? null, offsetAgeMs: m.offsetAgeMs };
}

/** A check, not a series: the slot never confirmed more than its task had committed before it was read. */
async function checkConfirmed(): Promise<void> {
  const committed = new Map<string, string | undefined>();
  for (const run of runs) {
    for (const entry of await run.committedOffsets()) committed.set(entry.partition.slot, entry.offset.lsn);
  }
  const rows = await cluster.query<{ slot_name: string; confirmed: string }>(
    'SELECT slot_name, confirmed_flush_lsn::text AS confirmed FROM pg_replication_slots',
  );
  for (const r of rows) {
    const lsn = committed.get(r.slot_name);
    if (lsn !== undefined && parseLsn(r.confirmed) > parseLsn(lsn)) overConfirmed.push(`${r.slot_name}: ${r.confirmed} > ${lsn}`);
  }
}

const mb = (bytes: number) => (bytes / MB).toFixed(1).padStart(7);

describe('WAL held by the slot while the captured table is idle, as the task metrics show it', () => {
  it(
    'stays bounded with heartbeats and grows with every write without them',
    async () => {
      const on = await startTask('hb_on', HEARTBEAT_MS);
      const off = await startTask('hb_off', 0);
      await cluster.query("INSERT INTO captured VALUES (1, 'the only captured change')");

      const began = Date.now();
      const startLsn = (await cluster.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'))[0]!.lsn;
      const samples: WalSample[] = [];
      let writing = true;
      // Unrelated writes: about 1.4 MB of WAL every half second, none of it published.
      const writer = (async () => {
        while (writing) {
          await cluster.query('INSERT INTO noise(payload) SELECT repeat(md5(g::text), 16) FROM generate_series(1, 2500) AS g');
          await sleep(500);
        }
      })();

      let nextSample = 0;
      const step = async (phase: WalSample['phase']) => {
        // The database runs in real time; the tasks' timers run on virtual clocks kept in step.
        const now = Date.now();
        for (const run of [on, off]) await run.clock.advanceTo(now);
        if (now - began >= nextSample) {
          nextSample += SAMPLE_EVERY_MS;
          await checkConfirmed();
          const sample: WalSample = { t: Math.round((now - began) / 1000), on: slotSample(on), off: slotSample(off), phase };
          samples.push(sample);
          console.log(
            `t=${String(sample.t).padStart(3)}s  unconfirmed MB: heartbeats on ${mb(sample.on.unconfirmed)}   off ${mb(sample.off.unconfirmed)}` +
              `   offset age s: on ${(sample.on.offsetAgeMs / 1000).toFixed(0)}  off ${(sample.off.offsetAgeMs / 1000).toFixed(0)}`,
          );
        }
        await sleep(100);
      };

      while (Date.now() - began < SECONDS * 1000) await step('writing');
      writing = false;
      await writer;
      const stopped = Date.now();
      const endLsn = (await cluster.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'))[0]!.lsn;
      const written = Number(
        (await cluster.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::bigint::text AS d', [endLsn, startLsn]))[0]!.d,
      );

      // The lag is reported after each flush: wait until both tasks have reported twice since
      // the writes stopped, and the task with heartbeats has had its position confirmed.
      const deadline = Date.now() + 30_000;
      while ((Date.now() - stopped < 2 * FLUSH_MS + 1000 || slotSample(on).unconfirmed > MB) && Date.now() < deadline)
        await step('after');
      nextSample = 0;
      await step('after');
      const final = samples.at(-1)!;

      // One-off check that the metric is the figure a hand-written query gives (the writes have
      // stopped, so the two can differ only by the few bytes the server wrote since the report).
      const byQuery = Object.fromEntries(
        (
          await cluster.query<{ slot_name: string; unconfirmed: string }>(
            `SELECT slot_name, pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint::text AS unconfirmed
               FROM pg_replication_slots`,
          )
        ).map((r) => [r.slot_name, Number(r.unconfirmed)]),
      );
      // And that it is what GET /metrics exports.
      const exported = async (run: Run) =>
        Number(/^tributary_source_lag_position\{[^}]*\} (\S+)$/m.exec(await run.metricsText())?.[1] ?? Number.NaN);

      console.log(`WAL written during the run: ${mb(written)} MB`);
      console.log(`final unconfirmed: heartbeats on ${mb(final.on.unconfirmed)} MB, off ${mb(final.off.unconfirmed)} MB`);
      if (process.env.PG_CDC_DEMO_OUT) {
        await writeFile(process.env.PG_CDC_DEMO_OUT, `${JSON.stringify({ seconds: SECONDS, written, samples }, null, 2)}\n`);
      }

      expect(on.status.state).toBe('RUNNING');
      expect(off.status.state).toBe('RUNNING');
      expect(on.heartbeats.length).toBeGreaterThan(0);
      expect(off.heartbeats).toHaveLength(0);
      // Status replies and flushes never confirmed to either slot more than was committed.
      expect(overConfirmed).toEqual([]);
      expect(Math.abs(byQuery.hb_off! - final.off.unconfirmed)).toBeLessThan(MB);
      expect(Math.abs(byQuery.hb_on! - final.on.unconfirmed)).toBeLessThan(MB);
      expect(await exported(off)).toBe(off.metrics().sourceLag?.position);
      expect(await exported(on)).toBe(on.metrics().sourceLag?.position);

      const during = samples.filter((s) => s.phase === 'writing');
      // Without heartbeats: the slot holds all of it unconfirmed, more with every sample, and
      // the committed offset has not moved since the only captured change.
      expect(final.off.unconfirmed).toBeGreaterThan(0.9 * written);
      expect(during.every((s, i) => i === 0 || s.off.unconfirmed >= during[i - 1]!.off.unconfirmed)).toBe(true);
      expect(final.off.offsetAgeMs).toBeGreaterThan(0.9 * SECONDS * 1000);
      // PostgreSQL's own measure of it (flush_lag of the WAL sender) says the same in time.
      expect(final.off.behindMs).toBeGreaterThan(0.5 * SECONDS * 1000);
      // With heartbeats: bounded while writing by what is written in a heartbeat interval, a
      // flush interval until the confirmation and another until the next report, with slack;
      // next to nothing once the writes stop; the committed offset advances at every flush.
      const rate = written / SECONDS;
      expect(Math.max(...during.map((s) => s.on.unconfirmed))).toBeLessThan(rate * (1 + 2 + 2 + 5) + 8 * MB);
      expect(final.on.unconfirmed).toBeLessThan(MB);
      expect(final.off.unconfirmed).toBeGreaterThan(100 * Math.max(final.on.unconfirmed, 1));
      expect(Math.max(...during.map((s) => s.on.offsetAgeMs))).toBeLessThan(HEARTBEAT_MS + FLUSH_MS + SAMPLE_EVERY_MS + 5000);
      expect(during.filter((s) => s.on.behindMs !== null).length).toBeGreaterThan(during.length / 2);
      expect(Math.max(...during.map((s) => s.on.behindMs ?? 0))).toBeLessThan(HEARTBEAT_MS + FLUSH_MS + 5000);
    },
    (SECONDS + 120) * 1000,
  );
});
