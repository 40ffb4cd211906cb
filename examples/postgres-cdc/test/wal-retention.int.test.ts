/**
 * The headline demonstration: the captured table idle, another table written continuously.
 * Two tasks read the same server at the same time, each from its own slot: one with heartbeats,
 * one without. The WAL each slot holds is sampled as it goes: "unconfirmed" (`pg_current_wal_lsn()
 * - confirmed_flush_lsn`) from the task's own source-lag metric (`run.metrics().sourceLag`, the
 * figure `tributary_source_lag_position` exports), "retained" (`- restart_lsn`, which no metric
 * shows) from the server. With heartbeats both stay bounded; without, they grow with every byte.
 *
 * `PG_CDC_DEMO_SECONDS` sets how long the unrelated writes go on (default 60);
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

/** One sample: seconds since the writes began, and per slot the bytes retained and not yet confirmed. */
interface WalSample {
  readonly t: number;
  readonly on: { readonly retained: number; readonly unconfirmed: number };
  readonly off: { readonly retained: number; readonly unconfirmed: number };
  readonly phase: 'writing' | 'after';
}

const SECONDS = Number(process.env.PG_CDC_DEMO_SECONDS ?? 60);
const SAMPLE_EVERY_MS = 3000;
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
    workerConfig: { 'offset.flush.interval.ms': 2000 },
    startTime: Date.now(),
  });
  runs.push(run);
  if (run.status.state !== 'RUNNING') throw new Error(`task on ${slot} did not start: ${JSON.stringify(run.status)}`);
  return run;
}

/** Slot positions seen ahead of what the task had committed: must stay empty. */
const overConfirmed: string[] = [];

/** The WAL a slot holds unconfirmed, as the task's source-lag metric last reported it (0 before the first report). */
const unconfirmed = (run: Run) => run.metrics().sourceLag?.position ?? 0;

async function probe(): Promise<Record<string, { retained: number }>> {
  // Committed offsets first: the slot may only have confirmed what was committed before it was read.
  const committed = new Map<string, string | undefined>();
  for (const run of runs) {
    for (const entry of await run.committedOffsets()) committed.set(entry.partition.slot, entry.offset.lsn);
  }
  const rows = await cluster.query<{ slot_name: string; retained: string; confirmed: string }>(
    `SELECT slot_name, confirmed_flush_lsn::text AS confirmed,
            pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint::text AS retained
       FROM pg_replication_slots`,
  );
  for (const r of rows) {
    const lsn = committed.get(r.slot_name);
    if (lsn !== undefined && parseLsn(r.confirmed) > parseLsn(lsn)) overConfirmed.push(`${r.slot_name}: ${r.confirmed} > ${lsn}`);
  }
  return Object.fromEntries(rows.map((r) => [r.slot_name, { retained: Number(r.retained) }]));
}

const mb = (bytes: number) => (bytes / MB).toFixed(1).padStart(7);

describe('WAL retained by the slot while the captured table is idle', () => {
  it(
    'stays bounded with heartbeats and grows with every write without them',
    async () => {
      const on = await startTask('hb_on', 1000);
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
          const p = await probe();
          const sample: WalSample = {
            t: Math.round((now - began) / 1000),
            on: { retained: p.hb_on!.retained, unconfirmed: unconfirmed(on) },
            off: { retained: p.hb_off!.retained, unconfirmed: unconfirmed(off) },
            phase,
          };
          samples.push(sample);
          console.log(
            `t=${String(sample.t).padStart(3)}s  retained MB: heartbeats on ${mb(sample.on.retained)}   off ${mb(sample.off.retained)}`,
          );
        }
        await sleep(100);
      };

      while (Date.now() - began < SECONDS * 1000) await step('writing');
      writing = false;
      await writer;
      const endLsn = (await cluster.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'))[0]!.lsn;
      const written = Number(
        (await cluster.query<{ d: string }>('SELECT pg_wal_lsn_diff($1, $2)::bigint::text AS d', [endLsn, startLsn]))[0]!.d,
      );

      // confirmed_flush_lsn moves with the next flush; restart_lsn only at the next
      // running-transactions record, which a checkpoint writes at once.
      const deadline = Date.now() + 30_000;
      while (unconfirmed(on) > MB && Date.now() < deadline) await step('after');
      await cluster.query('CHECKPOINT');
      while ((await probe()).hb_on!.retained > MB && Date.now() < deadline) await step('after');
      nextSample = 0;
      await step('after');
      const final = samples.at(-1)!;

      console.log(`WAL written during the run: ${mb(written)} MB`);
      console.log(`final retained: heartbeats on ${mb(final.on.retained)} MB, off ${mb(final.off.retained)} MB`);
      if (process.env.PG_CDC_DEMO_OUT) {
        await writeFile(process.env.PG_CDC_DEMO_OUT, `${JSON.stringify({ seconds: SECONDS, written, samples }, null, 2)}\n`);
      }

      expect(on.status.state).toBe('RUNNING');
      expect(off.status.state).toBe('RUNNING');
      expect(on.heartbeats.length).toBeGreaterThan(0);
      // Status replies and flushes never confirmed to either slot more than was committed.
      expect(overConfirmed).toEqual([]);
      expect(off.heartbeats).toHaveLength(0);
      const during = samples.filter((s) => s.phase === 'writing');
      // Without heartbeats: the slot keeps all of it, and more with every sample.
      expect(final.off.retained).toBeGreaterThan(0.9 * written);
      expect(during.every((s, i) => i === 0 || s.off.retained >= during[i - 1]!.off.retained)).toBe(true);
      // With heartbeats: bounded while writing by what is written between two steps of
      // restart_lsn (running-transactions records come about every 15 s) plus a heartbeat and a
      // flush interval, with some slack; next to nothing once a checkpoint has passed.
      const rate = written / SECONDS;
      expect(Math.max(...during.map((s) => s.on.retained))).toBeLessThan(rate * (15 + 1 + 2 + 7) + 16 * MB);
      expect(final.on.retained).toBeLessThan(16 * MB);
      expect(final.off.retained).toBeGreaterThan(10 * final.on.retained);
      // The source-lag metric tells the same story: the slot without heartbeats holds all of it unconfirmed.
      expect(final.off.unconfirmed).toBeGreaterThan(0.9 * written);
      expect(final.on.unconfirmed).toBeLessThan(MB);
      expect(during.every((s, i) => i === 0 || s.off.unconfirmed >= during[i - 1]!.off.unconfirmed)).toBe(true);
    },
    (SECONDS + 120) * 1000,
  );
});
