/**
 * Mistakes a connector author can make that used to be taken without a word: offsets that do
 * not survive storage, a predicate that does not answer true or false, an updateOffsets() that
 * does not return an array. Each now fails loudly, saying where and what is accepted.
 */
import * as t from 'io-ts';
import { EMPTY, from, Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { defineConfig } from '../../src/api/config-def.js';
import type { JsonObject } from '../../src/api/json.js';
import { offsetCodec } from '../../src/api/offset-codec.js';
import type { HeartbeatRecord, OffsetUpdate, SourceRecord } from '../../src/api/source-record.js';
import { SourceTask } from '../../src/api/source-task.js';
import { Predicate, type TransformRecord } from '../../src/api/transformation.js';
import { MockRuntime } from '../../src/testing/mock-runtime.js';

type P = { id: string };
type O = { n: number };
const codec = offsetCodec({ partition: t.type({ id: t.string }), offset: t.type({ n: t.number }) });

/** A task that polls `records` once, its offsets typed by `offsets`. */
function taskOf<PP, OO>(records: ReadonlyArray<SourceRecord<PP, OO>>, offsets = codec as unknown) {
  return class extends SourceTask<PP, OO, unknown> {
    readonly offsets = offsets as SourceTask<PP, OO, unknown>['offsets'];
    private done = false;
    start(): void {}
    poll(): Observable<SourceRecord<PP, OO>> {
      if (this.done) return EMPTY;
      this.done = true;
      return from(records);
    }
  };
}

const record = (offset: unknown, partition: unknown = { id: 'a' }) =>
  ({ sourcePartition: partition, sourceOffset: offset, topic: 't', value: 'v' }) as SourceRecord<P, O>;

describe('offsets that would not be stored as given', () => {
  it("fails the task when a record's offset does not decode with the task's own codec, storing the other partitions' offsets", async () => {
    // pg returns int8 as a string: { n: '42' } where the codec says number.
    const records = [...Array.from({ length: 100 }, (_, i) => record({ n: i + 1 })), record({ n: '42' }, { id: 'b' })];
    const run = await MockRuntime.start(taskOf(records), { config: {} });
    await run.advanceBy('5s');
    expect(await run.flush()).toBe(false);
    expect(run.status.state).toBe('FAILED');
    const error = run.status.state === 'FAILED' ? run.status.error.message : '';
    expect(error).toContain('produced a source offset that would not be read back as given, so it is not stored');
    expect(error).toContain('offset.n: expected number, got "42"');
    // Partition a's acknowledged offset is stored; b keeps what it had (nothing).
    expect(await run.store.read(run.connector)).toEqual([{ partition: { id: 'a' }, offset: { n: 100 } }]);
    await run.stop();
    expect(await run.store.read(run.connector)).toEqual([{ partition: { id: 'a' }, offset: { n: 100 } }]);
  });

  it('checks the offsets updateOffsets() adds too, also when a record offset was refused in the same flush, and counts the flush as failed', async () => {
    const Base = taskOf([record({ n: 1 }), record({ n: '42' }, { id: 'b' })]);
    class Updating extends Base {
      override updateOffsets(): ReadonlyArray<OffsetUpdate<P, O>> {
        return [{ partition: { id: 'c' }, offset: { n: 'x' } as unknown as O }];
      }
    }
    const run = await MockRuntime.start(Updating, { config: {} });
    await run.advanceBy('1s');
    expect(await run.flush()).toBe(false);
    expect(await run.store.read(run.connector)).toEqual([{ partition: { id: 'a' }, offset: { n: 1 } }]);
    expect(run.metrics().offsetCommitSuccesses).toBe(0);
    expect(run.metrics().offsetCommitFailures).toBeGreaterThan(0);
    await run.stop();
  });

  it("reports the store's failure, not only the refused offset, when the final flush's write fails too", async () => {
    const run = await MockRuntime.start(taskOf([record({ n: 1 }), record({ n: '42' }, { id: 'b' })]), {
      config: {},
      workerConfig: { 'offset.flush.interval.ms': '3600000' },
    });
    await run.advanceBy('1s');
    run.store.write = () => Promise.reject(new Error('store down'));
    await run.stop();
    const runner = (run as unknown as { runner: { finalFlushError?: Error } }).runner;
    expect(runner.finalFlushError?.message).toContain('store down');
  });

  it('refuses, from a codec not built with offsetCodec, an offset JSON would not store as given', async () => {
    const handWritten = {
      encodePartition: (p: P) => ({ id: p.id }),
      encodeOffset: (o: O) => ({ n: o.n }),
      decodePartition: (v: unknown) => ({ ok: true as const, value: v as P }),
      decodeOffset: (v: unknown) => ({ ok: true as const, value: v as O }),
    };
    const run = await MockRuntime.start(taskOf([record({ n: Number.NaN })], handWritten), { config: {} });
    await run.advanceBy('1s');
    expect(await run.flush()).toBe(false);
    expect(run.status.state === 'FAILED' && run.status.error.message).toContain(
      'offset.n is NaN, which JSON has no form for (it would be stored as null)',
    );
    expect(await run.store.read(run.connector)).toEqual([]);
    await run.stop();
  });

  it('refuses NaN, Infinity, a bigint, a Date, a Map and a cycle, naming the path, instead of storing another value', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const loose = offsetCodec({ partition: t.UnknownRecord, offset: t.UnknownRecord });
    const cases: Array<[unknown, unknown, string]> = [
      [{ id: 'a' }, { n: Number.NaN }, 'offset.n is NaN, which JSON has no form for (it would be stored as null)'],
      [{ id: 'a' }, { n: [1, Number.POSITIVE_INFINITY] }, 'offset.n[1] is Infinity'],
      [{ id: 'a' }, { lsn: 5n }, 'offset.lsn is the bigint 5n, which JSON has no form for: encode it as a string'],
      [
        { day: new Date(0) },
        { n: 1 },
        'partition.day is an object of class Date, which would be stored as "1970-01-01T00:00:00.000Z"',
      ],
      [{ id: 'a' }, { seen: new Map([['x', 1]]) }, 'offset.seen is an object of class Map, which would be stored as {}'],
      [{ id: 'a' }, cyclic, 'nests deeper than 64 levels (a cycle?)'],
    ];
    for (const [partition, offset, message] of cases) {
      const run = await MockRuntime.start(taskOf([record(offset, partition)], loose), { config: {} });
      await run.advanceBy('1s');
      expect(run.status.state, message).toBe('FAILED');
      expect(run.status.state === 'FAILED' && run.status.error.message).toContain(message);
      expect(await run.store.read(run.connector)).toEqual([]);
      await run.stop();
    }
  });

  it('still stores every JSON value as given: nested objects and arrays, null, undefined properties left out', async () => {
    const loose = offsetCodec({ partition: t.UnknownRecord, offset: t.UnknownRecord });
    const offset = { b: [1, 'x', null, { c: true }], a: { z: 0, y: undefined }, n: 1.5 };
    const run = await MockRuntime.start(taskOf([record(offset)], loose), { config: {} });
    await run.advanceBy('1s');
    expect(await run.flush()).toBe(true);
    expect((await run.store.read(run.connector)).map((e) => e.offset)).toEqual([
      { a: { z: 0 }, b: [1, 'x', null, { c: true }], n: 1.5 } as JsonObject,
    ]);
    await run.stop();
  });
});

describe('a predicate that does not answer true or false', () => {
  it('fails the record saying which predicate returned what, instead of applying its transform to every record', async () => {
    class Sometimes extends Predicate {
      readonly config = defineConfig({});
      test(r: TransformRecord): boolean {
        return (r.value === 'keep' ? true : undefined) as boolean;
      }
    }
    const run = await MockRuntime.start(taskOf([{ ...record({ n: 1 }), value: 'drop' }]), {
      config: {},
      plugins: { Sometimes },
      connectorConfig: {
        transforms: 'f',
        'transforms.f.type': 'Filter',
        'transforms.f.predicate': 'p',
        predicates: 'p',
        'predicates.p.type': 'Sometimes',
      },
    });
    await run.advanceBy('1s');
    expect(run.status.state).toBe('FAILED');
    expect(run.status.state === 'FAILED' && run.status.error.message).toContain(
      "Predicate 'p' (Sometimes) of transform 'f' returned undefined from test(); it must return true or false",
    );
    expect(await run.store.read(run.connector)).toEqual([]);
    await run.stop();
  });
});

describe('updateOffsets() that returns something other than an array', () => {
  it('says so, naming the hook, and still commits the acknowledged offsets', async () => {
    const Base = taskOf([record({ n: 1 })]);
    class Updating extends Base {
      override updateOffsets(): ReadonlyArray<OffsetUpdate<P, O>> {
        return { partition: { id: 'b' }, offset: { n: 9 } } as unknown as ReadonlyArray<OffsetUpdate<P, O>>;
      }
    }
    const warnings: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn: (_f: unknown, m?: string) => warnings.push(String(m)),
      error() {},
      child: () => logger,
    };
    const run = await MockRuntime.start(Updating, { config: {}, logger });
    await run.advanceBy('1s');
    expect(await run.flush()).toBe(true);
    expect(warnings).toContain(
      'updateOffsets() failed; flushing without its offsets: it returned an object, not an array of { partition, offset } (return [] or nothing for no updates)',
    );
    expect(await run.committedOffsets()).toEqual([{ partition: { id: 'a' }, offset: { n: 1 } }]);
    await run.stop();
  });
});

describe('record timestamps and headers Kafka would not take as given', () => {
  it('fails the record naming the field and what is accepted', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ timestamp: Number.NaN }, 'has timestamp NaN'],
      [{ timestamp: 1.5 }, 'has timestamp 1.5'],
      [{ timestamp: -1 }, 'has timestamp -1'],
      [{ timestamp: '2024-01-01' }, 'has timestamp "2024-01-01"'],
      [{ timestamp: new Date(0) }, 'has timestamp a Date ("1970-01-01T00:00:00.000Z")'],
      [{ headers: { v: 2 } }, "has header 'v' = 2"],
      [{ headers: { v: null } }, "has header 'v' = null"],
      [{ headers: 'ab' }, 'has headers that are a string'],
      [{ headers: [['k', 'v']] }, 'has headers that are an array'],
      [{ headers: new Map([['k', 'v']]) }, 'has headers that are a Map'],
    ];
    for (const [fields, message] of cases) {
      const run = await MockRuntime.start(taskOf([{ ...record({ n: 1 }), ...fields } as SourceRecord<P, O>]), { config: {} });
      await run.advanceBy('1s');
      expect(run.status.state, message).toBe('FAILED');
      expect(run.status.state === 'FAILED' && run.status.error.message).toContain(message);
      expect(run.captured).toEqual([]);
      await run.stop();
    }
  });

  it('takes a timestamp of 0 or now, string and Buffer header values, and no headers at all', async () => {
    const ok = [
      { ...record({ n: 1 }), timestamp: 0, headers: { a: 'x', b: Buffer.from([1]) } },
      { ...record({ n: 2 }), timestamp: 1_700_000_000_000 },
      { ...record({ n: 3 }), headers: {} },
    ];
    const run = await MockRuntime.start(taskOf(ok), { config: {} });
    await run.advanceBy('1s');
    expect(run.status.state).toBe('RUNNING');
    expect(run.captured.map((r) => r.timestamp)).toEqual([0, 1_700_000_000_000, undefined]);
    await run.stop();
  });
});

describe('poll() and produceHeartbeatRecords() that never complete, or a round far over the bound', () => {
  function recording() {
    const warned: Array<{ event: unknown; message: string }> = [];
    const logger = {
      debug() {},
      info() {},
      warn: (f: Record<string, unknown>, m?: string) => warned.push({ event: f.event, message: String(m) }),
      error() {},
      child: () => logger,
    };
    return { warned, logger };
  }

  it('says once per round that poll() has not completed after 60 s, instead of polling no more without a word', async () => {
    class Stuck extends SourceTask<P, O, unknown> {
      readonly offsets = codec;
      start(): void {}
      poll(): Observable<SourceRecord<P, O>> {
        return new Observable<SourceRecord<P, O>>((s) => s.next(record({ n: 1 })));
      }
    }
    const { warned, logger } = recording();
    const run = await MockRuntime.start(Stuck, { config: {}, logger });
    await run.advanceBy('59s');
    expect(warned.filter((w) => w.event === 'poll.slow')).toEqual([]);
    await run.advanceBy('10m');
    expect(warned.filter((w) => w.event === 'poll.slow').map((w) => w.message)).toEqual([
      'poll() of task test-connector-0 has not completed after 60 s (1 record(s) so far): the task polls again only once it completes. poll() must return an Observable that completes (from(batch), take(n), BoundedBuffer.drainObservable()); a source that keeps pushing belongs in start(), into a BoundedBuffer',
    ]);
    await run.stop();
  });

  it('says once that produceHeartbeatRecords() has not completed while its ticks are skipped', async () => {
    class StuckHeartbeat extends SourceTask<P, O, unknown> {
      readonly offsets = codec;
      start(): void {}
      poll(): Observable<SourceRecord<P, O>> {
        return EMPTY;
      }
      override produceHeartbeatRecords(): Observable<HeartbeatRecord<P, O>> {
        return new Observable<HeartbeatRecord<P, O>>(() => {});
      }
    }
    const { warned, logger } = recording();
    const run = await MockRuntime.start(StuckHeartbeat, {
      config: {},
      logger,
      connectorConfig: { 'heartbeat.interval.ms': '1000' },
    });
    await run.advanceBy('30s');
    expect(warned.filter((w) => w.event === 'heartbeat.slow')).toEqual([]);
    await run.advanceBy('5m');
    const slow = warned.filter((w) => w.event === 'heartbeat.slow');
    expect(slow).toHaveLength(1);
    expect(slow[0]?.message).toMatch(
      /^produceHeartbeatRecords\(\) of task test-connector-0 has not completed after 6\d s: every heartbeat tick is skipped until it does/,
    );
    await run.stop();
  });

  it('says once when one round takes records in flight over twice task.max.in.flight.records', async () => {
    const many = Array.from({ length: 350 }, (_, n) => record({ n }));
    const { warned, logger } = recording();
    const run = await MockRuntime.start(taskOf(many), {
      config: {},
      logger,
      holdAcks: () => true,
      workerConfig: { 'task.max.in.flight.records': '100' },
    });
    await run.advanceBy('1s');
    const overrun = warned.filter((w) => w.event === 'poll.overrun');
    expect(overrun).toHaveLength(1);
    expect(overrun[0]?.message).toContain('201 are in flight, over twice task.max.in.flight.records=100');
    expect(run.status.state).toBe('RUNNING');
    await run.stop();
  });
});
