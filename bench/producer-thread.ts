/**
 * CPU per record of the kafkajs producer thread's work before the socket write, without Kafka:
 * a packed batch (as the sender hands it over) unpacked, partitioned by the retry-stable
 * partitioner through the fixed `groupMessagesPerPartition`, and encoded by the one-pass
 * Produce body writer, in a loop over batches of 1,000 keyless records. CPU time of the process
 * (the collector's helper threads included), per record; the best and the median of the rounds.
 *
 *   npx tsx bench/producer-thread.ts [--from=<checkout>] [--value-bytes=100] [--rounds=5]
 *
 * `--from` takes the modules from another checkout of the repository (with its own node_modules
 * or a link to these), to compare two versions: run both in turn, several times.
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const option = (name: string, fallback: string): string =>
  process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const root = resolve(option('from', fileURLToPath(new URL('..', import.meta.url))));
const valueBytes = Number(option('value-bytes', '100'));
const rounds = Number(option('rounds', '5'));
if (!(valueBytes > 0) || !(rounds > 0)) throw new Error('--value-bytes and --rounds must be numbers > 0');

const { packTopics, unpackTopics } = await import(`${root}/src/kafka/kafkajs-thread-protocol.ts`);
const { crc32c, groupMessagesPerPartition } = await import(`${root}/src/kafka/kafkajs-fixes.ts`);
const { retryStablePartitioner } = await import(`${root}/src/kafka/retry-stable-partitioner.ts`);
const { encodeProduceBody } = await import(`${root}/src/kafka/kafkajs-produce-encoder.ts`);
const kafkajs = createRequire(`${root}/package.json`);
const deps = { Long: kafkajs('kafkajs/src/utils/long'), Encoder: kafkajs('kafkajs/src/protocol/encoder') };

const BATCH = 1000;
const messages = Array.from({ length: BATCH }, (_, i) => ({
  key: null,
  value: Buffer.from(`line ${i} `.padEnd(valueBytes, 'x')),
  partition: undefined,
}));
const partitionMetadata = [{ partitionErrorCode: 0, partitionId: 0, leader: 1, replicas: [1], isr: [1] }];
const partitioner = retryStablePartitioner();
const packed: ArrayBuffer[] = Array.from({ length: 8 }, () => packTopics([{ topic: 'bench', messages }]));

/** One batch through the thread's steps; the body's size, so that nothing is optimised away. */
function batch(k: number): number {
  // A copy, as each transferred batch is a buffer of its own.
  const topics = unpackTopics((packed[k % packed.length] as ArrayBuffer).slice(0));
  let size = 0;
  for (const { topic, messages: ms } of topics) {
    const grouped: Record<string, unknown[]> = groupMessagesPerPartition({ topic, partitionMetadata, messages: ms, partitioner });
    const partitions = Object.keys(grouped).map((p) => ({ partition: Number(p), firstSequence: 0, messages: grouped[p] }));
    const body = encodeProduceBody(
      { acks: -1, timeout: 30_000, producerId: -1, producerEpoch: 0, topicData: [{ topic, partitions }] },
      deps,
      crc32c,
    );
    if (body === undefined) throw new Error('the one-pass writer did not take the request');
    size += body.offset;
  }
  return size;
}

let sink = 0;
for (let k = 0; k < 2000; k++) sink += batch(k);
const perRound = 4000;
const ns: number[] = [];
for (let r = 0; r < rounds; r++) {
  const start = process.cpuUsage();
  for (let k = 0; k < perRound; k++) sink += batch(k);
  const used = process.cpuUsage(start);
  ns.push(((used.user + used.system) * 1000) / (perRound * BATCH));
}
ns.sort((a, b) => a - b);
console.log(
  `producer thread's work before the socket write, ${valueBytes} B values, ${root}: ` +
    `${(ns[0] as number).toFixed(0)} ns CPU per record at best, ${(ns[Math.floor(ns.length / 2)] as number).toFixed(0)} median of ${rounds} rounds (${sink > 0 ? 'ok' : '?'})`,
);
