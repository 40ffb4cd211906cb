import { describe, expect, it } from 'vitest';
import { inputChunks, inputLine } from '../../bench/lib/input-file.js';
import { steadyRate } from '../../bench/lib/steady.js';

describe('steadyRate (bench/lib/steady.ts)', () => {
  it('takes records/s between 10% and 90% of the records, leaving out a slow start and a slow drain', () => {
    // 1 s of start-up with nothing, then 1000 records/s for 10 s, then a 5 s tail for the last 100.
    const samples = [
      { at: 0, records: 0 },
      { at: 1000, records: 0 },
    ];
    for (let s = 1; s <= 10; s++) samples.push({ at: 1000 + s * 1000, records: s * 1000 });
    samples.push({ at: 16_000, records: 10_100 });
    const w = steadyRate(samples, 10_100);
    expect(w?.perSec).toBeCloseTo(1000, 6);
    expect(w?.fromAt).toBeCloseTo(1000 + 1010, 6);
    expect(w?.toAt).toBeCloseTo(1000 + 9090, 6);
    // The old figure, records / (all in topic − first record), is dragged down by the tail.
    expect(10_100 / ((16_000 - 2000) / 1000)).toBeLessThan(800);
  });

  it('gives nothing when the samples never reach the window', () => {
    expect(
      steadyRate(
        [
          { at: 0, records: 0 },
          { at: 1000, records: 50 },
        ],
        100,
      ),
    ).toBeUndefined();
    expect(steadyRate([{ at: 0, records: 100 }], 100)).toBeUndefined();
    expect(steadyRate([], 0)).toBeUndefined();
  });
});

describe('inputChunks (bench/lib/input-file.ts)', () => {
  it('writes exactly the lines inputLine describes, each with its newline, across chunk boundaries', () => {
    for (const lineBytes of [20, 100, 1024]) {
      const text = Buffer.concat([...inputChunks(250, lineBytes, 3000)]).toString('latin1');
      const expected = Array.from({ length: 250 }, (_, i) => `${inputLine(i + 1, lineBytes)}\n`).join('');
      expect(text).toBe(expected);
    }
  });
});
