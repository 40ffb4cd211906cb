/**
 * The input file every contender reads: `records` lines of exactly `lineBytes` ASCII bytes plus
 * a newline, line i (from 1) starting with its sequence number, e.g.
 * `0000000001 bench line ...`. Kept in bench/.work/input and reused while its size is right.
 */

import { once } from 'node:events';
import { createWriteStream, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';

const FILLER = 'the quick brown fox jumps over the lazy dog 0123456789 THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG ';

/** Line `seq` (1-based) without its newline. */
export function inputLine(seq: number, lineBytes: number): string {
  const head = `${String(seq).padStart(10, '0')} bench line `;
  let line = head;
  const start = seq % FILLER.length;
  while (line.length < lineBytes) line += FILLER.slice(start) + FILLER.slice(0, start);
  return line.slice(0, lineBytes);
}

/**
 * Writes lines `1 … records` of `lineBytes` bytes, each followed by a newline, in `chunkBytes`
 * pieces: one template line per rotation of the filler (a line's bytes depend only on
 * `seq % FILLER.length`, apart from its 10-digit number), copied and numbered. Gigabyte files
 * take seconds, not minutes.
 */
export function* inputChunks(records: number, lineBytes: number, chunkBytes = 4 * 2 ** 20): Generator<Buffer> {
  const lineLength = lineBytes + 1;
  const templates = Array.from({ length: FILLER.length }, (_, r) =>
    Buffer.from(`${inputLine(r === 0 ? FILLER.length : r, lineBytes)}\n`, 'latin1'),
  );
  const perChunk = Math.max(1, Math.floor(chunkBytes / lineLength));
  const digits = Math.min(10, lineBytes);
  for (let first = 1; first <= records; first += perChunk) {
    const n = Math.min(perChunk, records - first + 1);
    const chunk = Buffer.allocUnsafe(n * lineLength);
    for (let i = 0; i < n; i++) {
      const seq = first + i;
      const at = i * lineLength;
      (templates[seq % FILLER.length] as Buffer).copy(chunk, at);
      chunk.write(String(seq).padStart(10, '0').slice(0, digits), at, 'latin1');
    }
    yield chunk;
  }
}

/** Makes sure the input file exists with the right size and returns its path. */
export async function ensureInputFile(dir: string, records: number, lineBytes: number): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, `lines-${records}x${lineBytes}.txt`);
  const size = records * (lineBytes + 1);
  try {
    if (statSync(path).size === size) return path;
  } catch {
    // not there yet
  }
  const out = createWriteStream(path);
  for (const chunk of inputChunks(records, lineBytes)) {
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  if (statSync(path).size !== size) throw new Error(`Writing ${path} went wrong: expected ${size} bytes`);
  return path;
}
