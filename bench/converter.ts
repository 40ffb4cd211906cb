/**
 * CPU per value of the string converter, beside `Buffer.from(string)` (what it did before it
 * wrote into a slab of its own), each followed by the copy into a reused buffer that the kafkajs
 * sender's hand-over makes of every value. Lines as the file source gives them: one-byte text
 * of the given sizes, a thousand distinct strings cycled. CPU time of the process (the
 * collector's helper threads included), per value; the best and the median of the rounds, each
 * way in turn.
 *
 *   npx tsx bench/converter.ts [--sizes=100,1024,10240] [--values=1000000] [--rounds=5]
 */
import { stringConverter } from '../src/runtime/converters.js';

const option = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const sizes = option('sizes', '100,1024,10240').split(',').map(Number);
const values = Number(option('values', '1000000'));
const rounds = Number(option('rounds', '5'));
if (sizes.some((s) => !(s > 0)) || !(values > 0) || !(rounds > 0)) {
  throw new Error('--sizes, --values and --rounds must be numbers > 0');
}

const crossing = Buffer.allocUnsafe(4 * 1024 * 1024);
let sink = 0;

/** `values` strings through `convert`, each copied behind the last into `crossing`; CPU ns per value. */
function round(lines: readonly string[], convert: (s: string) => Buffer | null): number {
  const started = process.cpuUsage();
  let at = 0;
  for (let i = 0; i < values; i++) {
    const b = convert(lines[i % lines.length] as string) as Buffer;
    if (at + b.length > crossing.length) at = 0;
    crossing.set(b, at);
    at += b.length;
  }
  sink += at;
  const used = process.cpuUsage(started);
  return ((used.user + used.system) * 1000) / values;
}

const fmt = (ns: number[]): string => {
  const sorted = [...ns].sort((a, b) => a - b);
  return `best ${(sorted[0] as number).toFixed(0)}, median ${(sorted[Math.floor(sorted.length / 2)] as number).toFixed(0)}`;
};

console.log(`ns of CPU per value, ${values} values per round, ${rounds} rounds each way`);
for (const size of sizes) {
  const lines = Array.from({ length: 1000 }, (_, i) => `line ${i} `.padEnd(size, 'x'));
  const before: number[] = [];
  const after: number[] = [];
  for (let r = 0; r < rounds; r++) {
    before.push(round(lines, (s) => Buffer.from(s)));
    after.push(round(lines, (s) => stringConverter(s, 'bench')));
  }
  console.log(`${size} B: Buffer.from ${fmt(before)}; stringConverter ${fmt(after)}`);
}
if (sink < 0) console.log(sink);
