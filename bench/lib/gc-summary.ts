/**
 * Summarises the garbage collector's `--trace-gc-nvp` lines of a run's process.log, per isolate
 * (the main thread and the kafkajs producer thread each have one): bytes allocated and promoted
 * per record, scavenges and mark-compacts with their pauses. A young-generation mark-compact
 * (`gc=mmc`, under `--minor-mc`) counts with the scavenges: it does their work.
 *
 *   npx tsx bench/run.ts --only=tributary --runs=1 --records=1000000 --heartbeat-seconds=0 --node-options=--trace-gc-nvp
 *   npx tsx bench/lib/gc-summary.ts bench/.work/runs/<time>/tributary-1-<id>/process.log 1000000
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** What one isolate's collector did over a run. */
export interface IsolateGc {
  readonly isolate: string;
  /** Bytes allocated, summed over the `allocated=` of every collection (what was allocated since the one before). */
  readonly allocated: number;
  /** Young-generation collections: scavenges (`gc=s`) and, under `--minor-mc`, minor mark-compacts (`gc=mmc`). */
  readonly scavenges: number;
  readonly scavengeMs: number;
  /** Bytes scavenges moved to the old generation. */
  readonly promoted: number;
  /** Full mark-compacts (`gc=mc`, and any other kind of full collection). */
  readonly marks: number;
  readonly markMs: number;
}

/** The collections of every isolate in `log` (lines such as `[pid:0x...]  12 ms: pause=3.1 ... gc=s ...`), in order of first appearance. */
export function gcByIsolate(log: string): IsolateGc[] {
  const by = new Map<string, { -readonly [K in keyof IsolateGc]: IsolateGc[K] }>();
  for (const line of log.split('\n')) {
    const isolate = /^\[\d+:(0x[0-9a-f]+)\]/.exec(line)?.[1];
    if (isolate === undefined || !line.includes(' gc=')) continue;
    const field = (name: string): number => Number(new RegExp(`(?:^|\\s)${name}=([-0-9.]+)`).exec(line)?.[1] ?? 0);
    const kind = /\sgc=(\w+)/.exec(line)?.[1];
    let gc = by.get(isolate);
    if (gc === undefined) {
      gc = { isolate, allocated: 0, scavenges: 0, scavengeMs: 0, promoted: 0, marks: 0, markMs: 0 };
      by.set(isolate, gc);
    }
    gc.allocated += field('allocated');
    if (kind === 's' || kind === 'mmc') {
      gc.scavenges++;
      gc.scavengeMs += field('pause');
      gc.promoted += field('promoted');
    } else {
      gc.marks++;
      gc.markMs += field('pause');
    }
  }
  return [...by.values()];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [path, records] = process.argv.slice(2);
  if (path === undefined || records === undefined || !(Number(records) > 0)) {
    console.error('usage: npx tsx bench/lib/gc-summary.ts <process.log> <records>');
    process.exit(2);
  }
  const n = Number(records);
  let log: string;
  try {
    log = readFileSync(path, 'utf8');
  } catch (e) {
    console.error(`gc-summary: cannot read ${path}: ${(e as Error).message}`);
    process.exit(2);
  }
  const isolates = gcByIsolate(log);
  if (isolates.length === 0) {
    console.error(`gc-summary: ${path} has no --trace-gc-nvp lines (lines with gc=...): run with --node-options=--trace-gc-nvp`);
    process.exit(1);
  }
  for (const gc of isolates) {
    console.log(
      `${gc.isolate}: ${Math.round(gc.allocated / n)} B allocated per record, ${gc.scavenges} scavenges (${Math.round(gc.scavengeMs)} ms), ` +
        `${Math.round(gc.promoted / n)} B promoted per record, ${gc.marks} mark-compacts (${Math.round(gc.markMs)} ms)`,
    );
  }
}
