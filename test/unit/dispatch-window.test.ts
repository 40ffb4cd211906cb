import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DispatchWindow, type WindowBatch } from '../../src/kafka/dispatch-window.js';

/** A batch of `count` records for each of `partitions` (topic 't'). */
interface TestBatch extends WindowBatch {
  readonly id: number;
  readonly partitions: readonly number[];
  readonly count: number;
}

function batch(id: number, partitions: readonly number[] = [0], count = 1): TestBatch {
  return { id, partitions, count, state: 'open', attempt: 0, dispatchedAfter: 0, offsets: undefined };
}

/** Base offsets of topic 't', by partition (-1 where the batch has none). */
function bases(entries: Record<number, number>): Map<string, { next: number[] }> {
  const next: number[] = [];
  for (const [p, base] of Object.entries(entries)) next[Number(p)] = base;
  for (let p = 0; p < next.length; p++) next[p] ??= -1;
  return new Map([['t', { next }]]);
}

function setup(checkOvertaking = false) {
  const settled: Array<{ id: number; state: string; bases: number[] | undefined }> = [];
  const reordered: number[] = [];
  const window = new DispatchWindow<TestBatch>({
    checkOvertaking,
    onSettled: (b) => {
      settled.push({ id: b.id, state: b.state, bases: b.offsets?.get('t')?.next.slice() });
      b.state = 'done';
    },
    onReordered: (b) => reordered.push(b.id),
  });
  /** Dispatches every queued batch while slots allow; returns the dispatches made. */
  const pump = (slots: number) => {
    const out: Array<{ b: TestBatch; attempt: number }> = [];
    while (!window.holding() && window.hasSlot(slots)) {
      const b = window.takeReady();
      if (b === undefined) break;
      out.push({ b, attempt: window.dispatch(b) });
    }
    return out;
  };
  return { window, settled, reordered, pump };
}

describe('DispatchWindow', () => {
  it('settles batches in dispatch order whatever order their answers come in', () => {
    const { window, settled, pump } = setup();
    for (const id of [1, 2, 3]) window.enqueue(batch(id));
    const [d1, d2, d3] = pump(3);
    if (window.answered(d3!.b, d3!.attempt)) window.acked(d3!.b, bases({ 0: 2 }));
    if (window.answered(d2!.b, d2!.attempt)) window.failed(d2!.b);
    expect(settled).toEqual([]);
    if (window.answered(d1!.b, d1!.attempt)) window.acked(d1!.b, bases({ 0: 0 }));
    expect(settled.map((s) => [s.id, s.state])).toEqual([
      [1, 'acked'],
      [2, 'failed'],
      [3, 'acked'],
    ]);
    expect(window.head).toBeUndefined();
  });

  it('dispatches no more than the slots allow, and the next batch once a call is answered', () => {
    const { window, pump } = setup();
    for (const id of [1, 2, 3]) window.enqueue(batch(id));
    expect(pump(2).map((d) => d.b.id)).toEqual([1, 2]);
    expect(window.unanswered).toBe(2);
    const [d1] = [window.head!];
    expect(window.answered(d1, d1.attempt)).toBe(true);
    window.acked(d1, bases({ 0: 0 }));
    expect(pump(2).map((d) => d.b.id)).toEqual([3]);
  });

  it('goes back with the failed batch and every later one, in order, and holds dispatching until every call is answered', () => {
    const { window, settled, pump } = setup();
    for (const id of [1, 2, 3]) window.enqueue(batch(id));
    const [d1, d2, d3] = pump(3);
    window.enqueue(batch(4));
    expect(window.answered(d2!.b, d2!.attempt)).toBe(true);
    window.goBack(d2!.b);
    // 1 and 3 are still out: nothing goes out, not even the re-send.
    expect(pump(3)).toEqual([]);
    // 3's answer is stale now: it went back with 2.
    expect(window.answered(d3!.b, d3!.attempt)).toBe(false);
    expect(pump(3)).toEqual([]);
    expect(window.answered(d1!.b, d1!.attempt)).toBe(true);
    window.acked(d1!.b, bases({ 0: 0 }));
    expect(settled.map((s) => s.id)).toEqual([1]);
    const again = pump(3);
    expect(again.map((d) => [d.b.id, d.attempt])).toEqual([
      [2, 2],
      [3, 2],
      [4, 1],
    ]);
  });

  it('settles, rather than re-queues, a later batch that had already failed for good when an earlier one goes back', () => {
    const { window, settled, pump } = setup();
    for (const id of [1, 2]) window.enqueue(batch(id));
    const [d1, d2] = pump(2);
    window.answered(d2!.b, d2!.attempt);
    window.failed(d2!.b);
    window.answered(d1!.b, d1!.attempt);
    window.goBack(d1!.b);
    expect(settled.map((s) => [s.id, s.state])).toEqual([[2, 'failed']]);
    expect(pump(2).map((d) => d.b.id)).toEqual([1]);
  });

  it('ignores the answer to an earlier dispatch of a batch that was sent again', () => {
    const { window, settled, pump } = setup();
    window.enqueue(batch(1));
    const [first] = pump(1);
    window.answered(first!.b, first!.attempt);
    window.goBack(first!.b);
    const [second] = pump(1);
    expect(second!.attempt).toBe(2);
    expect(window.answered(first!.b, first!.attempt)).toBe(false);
    expect(window.answered(second!.b, second!.attempt)).toBe(true);
    window.acked(second!.b, bases({ 0: 7 }));
    expect(settled).toEqual([{ id: 1, state: 'acked', bases: [7] }]);
  });

  it('keeps records split off a batch right behind it', () => {
    const { window, settled, pump } = setup();
    for (const id of [1, 2]) window.enqueue(batch(id));
    const [d1, d2] = pump(2);
    const rest = batch(10);
    window.insertAfter(d1!.b, rest);
    window.answered(d1!.b, d1!.attempt);
    window.acked(d1!.b, bases({ 0: 0 }));
    window.goBack(rest);
    expect(settled.map((s) => s.id)).toEqual([1]);
    // The batch dispatched after 1 went back with the split-off rest, behind it: its answer is stale.
    expect(window.answered(d2!.b, d2!.attempt)).toBe(false);
    expect(pump(2).map((d) => d.b.id)).toEqual([10, 2]);
  });

  it('refuses loudly to go back from a batch that is not in flight', () => {
    const { window } = setup();
    expect(() => window.goBack(batch(1))).toThrow(/not in flight/);
  });

  it('takes expired batches off the queue and keeps the others in order', () => {
    const { window, pump } = setup();
    for (const id of [1, 2, 3, 4]) window.enqueue(batch(id));
    expect(window.takeExpired((b) => b.id % 2 === 0).map((b) => b.id)).toEqual([2, 4]);
    expect(pump(4).map((d) => d.b.id)).toEqual([1, 3]);
  });

  it('drains the dispatched batches first, then the queued ones', () => {
    const { window, pump } = setup();
    for (const id of [1, 2, 3]) window.enqueue(batch(id));
    pump(1);
    expect(window.drain().map((b) => b.id)).toEqual([1, 2, 3]);
    expect(window.head).toBeUndefined();
    expect(window.takeReady()).toBeUndefined();
  });

  it('with overtaking checked, sends a batch again that landed before an earlier one in flight with it', () => {
    const { window, settled, reordered, pump } = setup(true);
    for (const id of [1, 2]) window.enqueue(batch(id));
    const [d1, d2] = pump(2);
    // 2 was written first (offset 0), then 1 (offset 1); 2 is answered first.
    window.answered(d2!.b, d2!.attempt);
    window.acked(d2!.b, bases({ 0: 0 }));
    window.answered(d1!.b, d1!.attempt);
    window.acked(d1!.b, bases({ 0: 1 }));
    expect(settled.map((s) => s.id)).toEqual([1]);
    expect(reordered).toEqual([2]);
    const [again] = pump(2);
    expect(again!.b.id).toBe(2);
    window.answered(again!.b, again!.attempt);
    window.acked(again!.b, bases({ 0: 2 }));
    expect(settled.map((s) => [s.id, s.bases])).toEqual([
      [1, [1]],
      [2, [2]],
    ]);
  });

  it('with overtaking checked, does not take a lower offset than a batch acknowledged before it went out for overtaking', () => {
    const { window, settled, reordered, pump } = setup(true);
    window.enqueue(batch(1));
    const [d1] = pump(2);
    window.answered(d1!.b, d1!.attempt);
    window.acked(d1!.b, bases({ 0: 50 }));
    // The partition was recreated: the next batch lands at 0.
    window.enqueue(batch(2));
    const [d2] = pump(2);
    window.answered(d2!.b, d2!.attempt);
    window.acked(d2!.b, bases({ 0: 0 }));
    expect(reordered).toEqual([]);
    expect(settled.map((s) => s.id)).toEqual([1, 2]);
  });

  it('acknowledges every batch once, in dispatch order, at offsets that grow per partition, under any interleaving of writes, answers and failures (property)', () => {
    type Command = { kind: 'pump' | 'write' | 'ack' | 'fail'; pick: number };
    const command = fc.record({
      kind: fc.constantFrom<Command['kind']>('pump', 'write', 'ack', 'fail'),
      pick: fc.nat(),
    });
    const spec = fc.array(fc.uniqueArray(fc.integer({ min: 0, max: 2 }), { minLength: 1, maxLength: 3 }), {
      minLength: 1,
      maxLength: 8,
    });
    fc.assert(
      fc.property(spec, fc.array(command, { maxLength: 80 }), fc.integer({ min: 1, max: 4 }), (parts, commands, slots) => {
        const { window, settled, pump } = setup(true);
        const batches = parts.map((p, i) => batch(i, p, 1 + (i % 3)));
        for (const b of batches) window.enqueue(b);
        const log = [0, 0, 0];
        type Call = { b: TestBatch; attempt: number; offsets: Map<string, { next: number[] }> | undefined };
        let calls: Call[] = [];
        const write = (c: Call) => {
          const next = [-1, -1, -1];
          for (const p of c.b.partitions) {
            next[p] = log[p] as number;
            log[p] = (log[p] as number) + c.b.count;
          }
          c.offsets = new Map([['t', { next }]]);
        };
        const answer = (c: Call, ok: boolean) => {
          calls = calls.filter((x) => x !== c);
          if (!window.answered(c.b, c.attempt)) return;
          if (ok && c.offsets !== undefined) window.acked(c.b, c.offsets);
          else window.goBack(c.b);
        };
        const run = (kind: Command['kind'], pick: number) => {
          if (kind === 'pump') {
            for (const d of pump(slots)) calls.push({ ...d, offsets: undefined });
            return;
          }
          const candidates = calls.filter((c) =>
            kind === 'write' ? c.offsets === undefined : kind === 'ack' ? c.offsets !== undefined : true,
          );
          const c = candidates[pick % Math.max(1, candidates.length)];
          if (c === undefined) return;
          if (kind === 'write') write(c);
          else answer(c, kind === 'ack');
        };
        for (const { kind, pick } of commands) run(kind, pick);
        // Then the broker behaves: everything out is written and answered in call order.
        for (let round = 0; settled.length < batches.length; round++) {
          if (round > 100) throw new Error(`no progress: ${settled.length} of ${batches.length} settled`);
          for (const d of pump(slots)) calls.push({ ...d, offsets: undefined });
          for (const c of [...calls]) {
            if (c.offsets === undefined) write(c);
            answer(c, true);
          }
        }
        expect(settled.map((s) => s.id)).toEqual(batches.map((b) => b.id));
        expect(settled.every((s) => s.state === 'acked')).toBe(true);
        for (const p of [0, 1, 2]) {
          const at = settled.map((s) => s.bases?.[p] ?? -1).filter((o) => o >= 0);
          for (let k = 1; k < at.length; k++) expect(at[k]).toBeGreaterThan(at[k - 1] as number);
        }
      }),
      { numRuns: 300 },
    );
  });
});
