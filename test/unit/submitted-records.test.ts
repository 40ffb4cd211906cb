import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SubmittedRecords } from '../../src/runtime/submitted-records.js';

describe('SubmittedRecords', () => {
  it('never lets a committed offset pass the first unacknowledged record of its partition, under any ack order and failures', () => {
    fc.assert(
      fc.property(
        // records: partition index per record, in submission order
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 60 }),
        // a permutation seed, a set of records whose ack never comes (failed), and checkpoints
        fc.func(fc.integer()),
        fc.array(fc.integer({ min: 0, max: 59 }), { maxLength: 10 }),
        fc.array(fc.integer({ min: 0, max: 60 }), { maxLength: 8 }),
        (partitions, rank, failedIdx, checkpoints) => {
          const sr = new SubmittedRecords<string, number>();
          const handles = partitions.map((p, i) => sr.submit(`p${p}`, `p${p}`, i));
          const failed = new Set(failedIdx.filter((i) => i < partitions.length));
          const order = partitions
            .map((_, i) => i)
            .filter((i) => !failed.has(i))
            .sort((a, b) => rank(a) - rank(b) || a - b);
          const acked = new Set<number>();
          const committed = new Map<string, number>();
          const check = () => {
            for (const [key, entry] of sr.takeCommittable()) committed.set(key, entry.offset);
            for (const [key, offset] of committed) {
              const p = Number(key.slice(1));
              const ofPartition = partitions
                .map((q, i) => [q, i] as const)
                .filter(([q]) => q === p)
                .map(([, i]) => i);
              // Every record of the partition up to the committed one is acknowledged...
              for (const i of ofPartition) if (i <= offset) expect(acked.has(i)).toBe(true);
              // ...and the committed offset is the last of the acknowledged prefix.
              const firstUnacked = ofPartition.find((i) => !acked.has(i));
              const expected =
                firstUnacked === undefined ? ofPartition.at(-1) : ofPartition.filter((i) => i < firstUnacked).at(-1);
              expect(offset).toBe(expected);
            }
          };
          const cps = new Set(checkpoints);
          order.forEach((i, step) => {
            sr.ack(handles[i] as (typeof handles)[number]);
            acked.add(i);
            if (cps.has(step)) check();
          });
          check();
          expect(sr.inFlight).toBe(failed.size);
          // With no failure, every partition commits its last record.
          if (failed.size === 0) {
            for (const p of new Set(partitions)) expect(committed.get(`p${p}`)).toBe(partitions.lastIndexOf(p));
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it('places offsets submitted as acknowledged behind the unacknowledged records of their partition', () => {
    const sr = new SubmittedRecords<string, number>();
    const first = sr.submit('a', 'a', 1);
    sr.submitAcked('a', 'a', 5);
    sr.submitAcked('b', 'b', 7);
    expect(Object.fromEntries([...sr.takeCommittable()].map(([k, v]) => [k, v.offset]))).toEqual({ b: 7 });
    sr.ack(first);
    expect(Object.fromEntries([...sr.takeCommittable()].map(([k, v]) => [k, v.offset]))).toEqual({ a: 5 });
    expect(sr.takeCommittable().size).toBe(0);
  });

  it('counts a double acknowledgement once', () => {
    const sr = new SubmittedRecords<string, number>();
    const h = sr.submit('a', 'a', 1);
    sr.submit('a', 'a', 2);
    sr.ack(h);
    sr.ack(h);
    expect(sr.inFlight).toBe(1);
  });

  it('keeps nothing for a partition once its records are committable: 100,000 partitions leave no state behind', () => {
    const sr = new SubmittedRecords<{ file: number }, number>();
    // A source with a partition per file: each one seen once, a few in flight at a time.
    let held = [] as Array<ReturnType<typeof sr.submit>>;
    for (let file = 0; file < 100_000; file++) {
      held.push(sr.submit(`f${file}`, { file }, 1));
      if (held.length === 100) {
        for (const h of held) sr.ack(h);
        held = [];
        expect(sr.takeCommittable().size).toBe(100);
        expect(sr.partitionCount).toBe(0);
      }
    }
    expect(sr.inFlight).toBe(0);
    // Every map the tracker holds is empty, whatever it calls them.
    const maps = Object.values(sr).filter((v): v is Map<unknown, unknown> => v instanceof Map);
    expect(maps.length).toBeGreaterThan(0);
    expect(maps.map((m) => m.size)).toEqual(maps.map(() => 0));
  });

  it('holds memory in proportion to the records in flight, not to the records written, when partitions never drain', () => {
    // 10,000 source partitions in turn, 20,000 records in flight (two per partition), offsets
    // taken every 2,000 records, as the runner does under full load: no queue ever empties.
    for (const partitions of [1, 100, 10_000]) {
      const sr = new SubmittedRecords<number, number>();
      const inFlight: Array<ReturnType<typeof sr.submit>> = [];
      let next = 0;
      let taken = 0;
      for (let i = 0; i < 1_000_000; i++) {
        inFlight.push(sr.submit(`p${i % partitions}`, i % partitions, i));
        if (inFlight.length - next > 20_000) sr.ack(inFlight[next++] as ReturnType<typeof sr.submit>);
        if (next > 100_000) {
          inFlight.splice(0, next);
          next = 0;
        }
        if (i % 2000 === 1999) taken += sr.takeCommittable().records;
      }
      expect(sr.inFlight).toBe(20_000);
      expect(taken).toBeGreaterThan(900_000);
      expect(sr.retained).toBeLessThanOrEqual(2 * 22_000 + 16 * sr.partitionCount);
    }
  });
});
