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
  const chunk: string[] = [];
  for (let i = 1; i <= records; i++) {
    chunk.push(inputLine(i, lineBytes));
    if (chunk.length === 10_000 || i === records) {
      if (!out.write(`${chunk.join('\n')}\n`)) await once(out, 'drain');
      chunk.length = 0;
    }
  }
  out.end();
  await once(out, 'finish');
  if (statSync(path).size !== size) throw new Error(`Writing ${path} went wrong: expected ${size} bytes`);
  return path;
}
