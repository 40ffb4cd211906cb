/**
 * The raw kafkajs producer, as its own process: reads the input file's lines and sends them with
 * `producer.sendBatch`, in batches of the same size as Tributary's sender makes
 * (`--batch-records` records or `--batch-bytes` bytes of values, whichever comes first), with at
 * most `--in-flight` calls outstanding, the same acks, idempotence and no compression. The next
 * batch is read and built while the previous one is in flight. No offsets, no callbacks per
 * record, no retries of its own: the least work a kafkajs program can do for these lines.
 *
 * kafkajs is loaded as Tributary loads it, with the producer fixes of
 * src/kafka/kafkajs-fixes.ts, so that the two differ by Tributary's own work; with
 * `--kafkajs=published` it is kafkajs 2.2.4 as npm has it (what a hand-rolled loop gets).
 *
 * Built into bench/.work/build by bench/lib/build.ts and started by bench/run.ts:
 *   node kafkajs-raw-producer.js --bootstrap=H:P --topic=T --file=F [--batch-records=1000]
 *     [--batch-bytes=524288] [--in-flight=1] [--acks=-1] [--idempotent=false] [--kafkajs=fixed|published]
 * Exits 0 once every batch is acknowledged, 1 if any failed. On SIGTERM it stops reading, sends
 * what it has read and exits the same way (the harness's time-bounded runs).
 */
import { open } from 'node:fs/promises';
import type * as Kafkajs from 'kafkajs';
import type { Message } from 'kafkajs';

const NEWLINE = 0x0a;
const READ_BYTES = 64 * 1024;

function option(name: string, fallback?: string): string {
  const v = process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
  if (v === undefined) throw new Error(`--${name}=... is required`);
  return v;
}

async function main(): Promise<void> {
  const topic = option('topic');
  const file = option('file');
  const batchRecords = Number(option('batch-records', '1000'));
  const batchBytes = Number(option('batch-bytes', String(512 * 1024)));
  const inFlight = Number(option('in-flight', '1'));
  const acks = Number(option('acks', '-1'));
  const idempotent = option('idempotent', 'false') === 'true';
  const which = option('kafkajs', 'fixed');
  if (which !== 'fixed' && which !== 'published') throw new Error(`--kafkajs must be fixed or published, got '${which}'`);
  // Loaded here, not at the top: the fixes must be in place before kafkajs loads, and must
  // stay out of the published run.
  if (which === 'fixed') {
    const { kafkajsFixes } = await import('../../src/kafka/kafkajs-fixes.js');
    if (kafkajsFixes.notApplied.length > 0) throw new Error(`kafkajs fixes not applied: ${kafkajsFixes.notApplied.join('; ')}`);
  }
  const { CompressionTypes, Kafka, logLevel, Partitioners } = (await import('kafkajs')) as typeof Kafkajs;
  const kafka = new Kafka({ clientId: 'bench-kafkajs-raw', brokers: option('bootstrap').split(','), logLevel: logLevel.WARN });
  const producer = kafka.producer({
    createPartitioner: Partitioners.DefaultPartitioner,
    idempotent,
    maxInFlightRequests: inFlight,
  });
  await producer.connect();

  const outstanding = new Set<Promise<void>>();
  let failed = 0;
  let sent = 0;
  let batch: Message[] = [];
  let bytes = 0;
  const dispatch = async (): Promise<void> => {
    if (batch.length === 0) return;
    while (outstanding.size >= inFlight) await Promise.race(outstanding);
    const messages = batch;
    batch = [];
    bytes = 0;
    sent += messages.length;
    const p: Promise<void> = producer
      .sendBatch({ topicMessages: [{ topic, messages }], acks, timeout: 30_000, compression: CompressionTypes.None })
      .then(
        () => {},
        (e: unknown) => {
          failed += messages.length;
          process.stderr.write(`sendBatch failed: ${e instanceof Error ? e.message : String(e)}\n`);
        },
      )
      .finally(() => outstanding.delete(p));
    outstanding.add(p);
  };
  /** Adds a line to the batch; true when the batch is full and must be dispatched. */
  const add = (value: Buffer): boolean => {
    batch.push({ value });
    bytes += value.length;
    return batch.length >= batchRecords || bytes >= batchBytes;
  };

  // SIGTERM (a run stopped after a fixed time): stop reading, send what is read, exit normally.
  let stopping = false;
  process.once('SIGTERM', () => {
    stopping = true;
  });
  const handle = await open(file, 'r');
  let partial: Buffer | undefined;
  let eof = false;
  while (!stopping) {
    // A fresh buffer per read, so that lines can be slices of it (no copy) while their batch is out.
    const buffer = Buffer.allocUnsafe(READ_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, READ_BYTES, null);
    if (bytesRead === 0) {
      eof = true;
      break;
    }
    const chunk = buffer.subarray(0, bytesRead);
    let from = 0;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, from);
      if (newline === -1) {
        partial = partial === undefined ? Buffer.from(chunk.subarray(from)) : Buffer.concat([partial, chunk.subarray(from)]);
        break;
      }
      let line = chunk.subarray(from, newline);
      if (partial !== undefined) {
        line = Buffer.concat([partial, line]);
        partial = undefined;
      }
      if (add(line)) await dispatch();
      from = newline + 1;
    }
  }
  // A part line left when stopped early is not a line: only the file's last line may lack its newline.
  if (eof && partial !== undefined && partial.length > 0) add(partial);
  await handle.close();
  await dispatch();
  await Promise.all(outstanding);
  await producer.disconnect();
  process.stderr.write(`sent ${sent} records${failed > 0 ? `, ${failed} FAILED` : ''}\n`);
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
