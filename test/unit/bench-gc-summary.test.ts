import { describe, expect, it } from 'vitest';
import { gcByIsolate } from '../../bench/lib/gc-summary.js';

// Lines as node --trace-gc-nvp writes them (shortened: the fields gcByIsolate reads, among others).
const LOG = [
  '{"level":30,"msg":"worker started"}',
  '[100:0x1a2b]      106 ms: pause=3.0 mutator=97.0 gc=s reduce_memory=0 scavenge=2.58 allocated=6000000 promoted=1000 new_space_survived=385864',
  '[100:0x7f00]      130 ms: pause=2.5 mutator=20.8 gc=s reduce_memory=0 allocated=4000000 promoted=300000 new_space_survived=436872',
  '[100:0x1a2b]      150 ms: pause=1.5 mutator=40.0 gc=s allocated=2000000 promoted=0',
  '[100:0x7f00]      290 ms: pause=9.1 mutator=30.0 gc=mc reduce_memory=0 allocated=500000 promoted=0',
  '[100:0x7f00]      300 ms: Scavenge 35.0 (54.3) -> 24.5 (54.8) MB, 3.90 / 0.00 ms  (average mu = 1.000) task;',
].join('\n');

describe('gcByIsolate', () => {
  it("sums each isolate's allocations, scavenges, promotions and mark-compacts, and skips other lines", () => {
    expect(gcByIsolate(LOG)).toEqual([
      { isolate: '0x1a2b', allocated: 8_000_000, scavenges: 2, scavengeMs: 4.5, promoted: 1000, marks: 0, markMs: 0 },
      { isolate: '0x7f00', allocated: 4_500_000, scavenges: 1, scavengeMs: 2.5, promoted: 300_000, marks: 1, markMs: 9.1 },
    ]);
  });

  it('counts a minor mark-compact (--minor-mc) with the scavenges, not as a full mark-compact', () => {
    const log = [
      '[100:0x1a2b]      106 ms: pause=1.5 mutator=97.0 gc=mmc reduce_memory=0 allocated=4000000 promoted=200000',
      '[100:0x1a2b]      206 ms: pause=8.0 mutator=97.0 gc=mc reduce_memory=0 allocated=1000000 promoted=0',
    ].join('\n');
    expect(gcByIsolate(log)).toEqual([
      { isolate: '0x1a2b', allocated: 5_000_000, scavenges: 1, scavengeMs: 1.5, promoted: 200_000, marks: 1, markMs: 8 },
    ]);
  });

  it('gives nothing for a log without collections', () => {
    expect(gcByIsolate('{"msg":"no gc here"}\n')).toEqual([]);
  });
});
