/**
 * Memory kept alive per record in flight (JS heap and Buffers): what the task pipeline holds for each record sent
 * and not yet acknowledged (up to `task.max.in.flight.records` of them). Those objects survive
 * young-generation collections and are copied by each, so they are a large part of the GC cost
 * under load. No Kafka: examples/file-source reads `records` lines (100 B each by default) into a sender that
 * holds every callback; once all are held the heap is measured after a full GC, then the
 * sender acknowledges them and the heap is measured again.
 *
 *   node --expose-gc --import tsx bench/retained.ts [records=100000] [line-bytes=100]
 *
 * Prints bytes per record in flight for the pipeline, and as the bare figure a value Buffer of
 * the line and a callback per record (what a sender that keeps the record's bytes holds).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OutgoingRecord, RecordSender, SendCallback } from '../src/runtime/ports.js';
import { MemoryOffsetStore } from '../src/storage/memory-offset-store.js';
import { fileSourceRunner, writeNumberedLines } from './lib/file-source-runner.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with node --expose-gc --import tsx bench/retained.ts');
const N = Number(process.argv[2] ?? 100_000);
const LINE_BYTES = Number(process.argv[3] ?? 100);

/** Holds every record's callback (not the record: a sender need not keep it once handed over). */
class HoldingSender implements RecordSender {
  held: SendCallback[] = [];
  send(_record: OutgoingRecord, onDone: SendCallback): void {
    this.held.push(onDone);
  }
  release(): void {
    const held = this.held;
    this.held = [];
    for (const onDone of held) onDone(undefined, { topic: 'bench', partition: 0, offset: 0 });
  }
  async flush(): Promise<void> {}
  async close(): Promise<void> {}
}

/** The JS heap and the memory of Buffers (outside the heap), after full collections. */
function heap(): number {
  gc?.();
  gc?.();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return heapUsed + arrayBuffers;
}

const dir = await mkdtemp(join(tmpdir(), 'tributary-retained-'));
try {
  const file = await writeNumberedLines(dir, N, LINE_BYTES);
  const sender = new HoldingSender();
  const runner = fileSourceRunner({
    file,
    batch: 2000,
    sender,
    offsetStore: new MemoryOffsetStore(),
    workerConfig: { 'task.max.in.flight.records': String(N) },
  });
  await runner.start();
  // Let the runner's own start-up allocations settle before the baseline.
  while (sender.held.length === 0) await new Promise((r) => setImmediate(r));
  const base = heap();
  const baseHeld = sender.held.length;
  while (sender.held.length < N) await new Promise((r) => setTimeout(r, 5));
  const full = heap();
  const perRecord = (full - base) / (N - baseHeld);
  sender.release();
  await runner.stop();

  // The bare figure: a value Buffer of the line's bytes and a callback closure per record.
  const bare: Array<[Buffer, SendCallback]> = [];
  const bareBase = heap();
  let acked = 0;
  for (let i = 0; i < N; i++) {
    const value = Buffer.from(`${i} ${'x'.repeat(LINE_BYTES - String(i).length - 2)}`);
    bare.push([value, () => void acked++]);
  }
  const bareFull = heap();
  console.log(
    `records in flight: ${N - baseHeld} of ${LINE_BYTES} B (file source, string converter, the worker's metrics listener)`,
  );
  console.log(`pipeline: ${Math.round(perRecord)} bytes (heap and Buffers) per record in flight`);
  console.log(`bare (value Buffer + callback): ${Math.round((bareFull - bareBase) / N)} bytes per record (${bare.length} held)`);
} finally {
  await rm(dir, { recursive: true, force: true });
}
