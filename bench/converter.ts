/**
 * CPU per value of the main thread's part of a record's way to the kafkajs producer thread:
 * the string converter, then the copy of the value into the batch that crosses to the thread
 * (`packTopics`, in batches of 1,000). Beside it the same with `Buffer.from(string)`, what the
 * converter did before it wrote into a slab of its own. Lines as the file source gives them:
 * one-byte text of the given sizes, a thousand distinct strings cycled. CPU time of the process
 * (the collector's helper threads included), per value; the best and the median of the rounds,
 * each way in turn.
 *
 *   npx tsx bench/converter.ts [--sizes=100,1024,10240] [--values=1000000] [--rounds=5]
 */
import { packTopics } from '../src/kafka/kafkajs-thread-protocol.js';
import { stringConverter } from '../src/runtime/converters.js';

const option = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const sizes = option('sizes', '100,1024,10240').split(',').map(Number);
const values = Number(option('values', '1000000'));
const rounds = Number(option('rounds', '5'));
if (sizes.some((s) => !(s > 0)) || !(values > 0) || !(rounds > 0)) {
  throw new Error('--sizes, --values and --rounds must be numbers > 0');
}

const BATCH = 1000;
let sink = 0;

/** `values` strings through `convert` and packed in batches; CPU ns per value. */
function round(lines: readonly string[], convert: (s: string) => Buffer | null): number {
  const started = process.cpuUsage();
  let messages: Array<{ key: null; value: Buffer | null; partition: undefined }> = [];
  for (let i = 0; i < values; i++) {
    messages.push({ key: null, value: convert(lines[i % lines.length] as string), partition: undefined });
    if (messages.length === BATCH || i === values - 1) {
      sink += packTopics([{ topic: 'bench', messages }]).byteLength;
      messages = [];
    }
  }
  const used = process.cpuUsage(started);
  return ((used.user + used.system) * 1000) / values;
}

const fmt = (ns: number[]): string => {
  const sorted = [...ns].sort((a, b) => a - b);
  return `best ${(sorted[0] as number).toFixed(0)}, median ${(sorted[Math.floor(sorted.length / 2)] as number).toFixed(0)}`;
};

console.log(`ns of CPU per value (convert and pack), ${values} values per round, ${rounds} rounds each way`);
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
