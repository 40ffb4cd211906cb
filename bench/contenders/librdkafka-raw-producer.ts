/**
 * The raw librdkafka producer, as its own process: reads the input file's lines and hands each
 * to `@confluentinc/kafka-javascript`'s librdkafka `Producer.produce()` directly, with the
 * librdkafka settings Tributary's `sender=librdkafka` derives from the same `producer.*`
 * properties (`librdkafkaConfig(resolveProducerConfig(...))` from src/kafka, so the two cannot
 * drift apart: acks=all, one request in flight, idempotence off, linger 5 ms, no compression,
 * the same batch.size and batch.num.messages). librdkafka batches itself, so "the same batches"
 * means the same batching settings. One delivery report per record is counted (as the sender
 * gets); a full local queue is waited out with poll(). No offsets, no records, no runtime. With
 * --opaque (bench/run.ts passes it under BENCH_RAW_OPAQUE=1) each record carries an opaque (its
 * number), as the sender's records do, to measure what that costs. --max-in-flight=N: no new read
 * while N records or more are handed over and not yet reported, so at most N plus one read's
 * lines (bench/run.ts passes Tributary's default task.max.in.flight.records, which the runner
 * also checks per poll round), so that the loop pays for its delivery reports while it writes, as
 * a producer that runs for days must; 0 leaves only librdkafka's own queue limit, which lets the
 * loop queue most of the file and take the reports after the records are in the topic (outside
 * the steady window).
 *
 * Built into bench/.work/build by bench/lib/build.ts and started by bench/contenders/librdkafka-raw.ts:
 *   node librdkafka-raw-producer.js --bootstrap=H:P --topic=T --file=F --max-in-flight=N [--set=producer.key=value ...] [--opaque]
 * Exits 0 once every record is reported delivered, 1 if any failed. On SIGTERM it stops reading,
 * waits for what it has handed over and exits the same way (the harness's time-bounded runs).
 */
import { open } from 'node:fs/promises';
import { librdkafkaConfig, loadRdkafka, type RdkafkaDeliveryReport } from '../../src/kafka/librdkafka-sender.js';
import { resolveProducerConfig } from '../../src/kafka/producer-config.js';

const NEWLINE = 0x0a;
const READ_BYTES = 64 * 1024;
/** librdkafka's RD_KAFKA_RESP_ERR__QUEUE_FULL. */
const QUEUE_FULL = -184;
/** --opaque (BENCH_RAW_OPAQUE=1 for bench/run.ts): an opaque per record, as the sender passes. */
const withOpaque = process.argv.includes('--opaque');
/** --max-in-flight=N: records handed over and not yet reported, at most (0: librdkafka's queue only). */
const maxInFlight = Number(option('max-in-flight'));
if (!Number.isSafeInteger(maxInFlight) || maxInFlight < 0) {
  throw new Error(`--max-in-flight must be a whole number >= 0, got '${option('max-in-flight')}'`);
}

function option(name: string): string {
  const v = process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  if (v === undefined) throw new Error(`--${name}=... is required`);
  return v;
}

/** The resolved producer settings of `--set=producer.k=v` flags, as the worker would resolve them. */
function producerSettings(bootstrap: string): Record<string, unknown> {
  const worker: Record<string, string> = {};
  for (const a of process.argv) {
    if (!a.startsWith('--set=')) continue;
    const kv = a.slice('--set='.length);
    worker[kv.slice(0, kv.indexOf('='))] = kv.slice(kv.indexOf('=') + 1);
  }
  const resolved = resolveProducerConfig(worker, { name: 'bench-librdkafka-raw' }, { task: 0 });
  return { ...librdkafkaConfig(bootstrap, resolved), event_cb: true };
}

async function main(): Promise<void> {
  const topic = option('topic');
  const file = option('file');
  const bootstrap = option('bootstrap');
  const rd = loadRdkafka(process.cwd()) as unknown as {
    Producer: new (
      config: Record<string, unknown>,
    ) => {
      connect(o: object, cb: (e: Error | null) => void): void;
      disconnect(cb: () => void): void;
      produce(topic: string, partition: number | null, value: Buffer, key: null, ts?: null, opaque?: unknown): void;
      setPollInterval(ms: number): void;
      poll(): void;
      flush(ms: number, cb: (e: Error | null) => void): void;
      on(event: 'delivery-report', l: (e: Error | null, r: RdkafkaDeliveryReport) => void): void;
      on(event: 'event.error', l: (e: Error) => void): void;
    };
  };
  const producer = new rd.Producer(producerSettings(bootstrap));
  let handed = 0;
  let delivered = 0;
  let failed = 0;
  let firstError: string | undefined;
  let wake: (() => void) | undefined;
  producer.on('delivery-report', (error) => {
    delivered++;
    if (error) {
      failed++;
      firstError ??= error.message;
    }
    const w = wake;
    wake = undefined;
    w?.();
  });
  producer.on('event.error', (e) => process.stderr.write(`librdkafka: ${e.message}\n`));
  await new Promise<void>((resolve, reject) => producer.connect({}, (e) => (e ? reject(e) : resolve())));
  // As the sender does: delivery reports are polled every 5 ms.
  producer.setPollInterval(5);
  const reported = (): Promise<void> => new Promise<void>((r) => (wake = r));

  /** Hands a line to librdkafka; false when its queue is full. */
  const tryProduce = (value: Buffer): boolean => {
    try {
      // --opaque: an opaque per record, as a sender needs to tell its records' reports apart (the
      // binding keeps each in a V8 persistent handle until its report): what that costs.
      if (withOpaque) producer.produce(topic, null, value, null, null, handed);
      else producer.produce(topic, null, value, null);
      handed++;
      return true;
    } catch (e) {
      if ((e as { code?: number }).code !== QUEUE_FULL) throw e;
      return false;
    }
  };
  /** Waits for delivery reports until the queue takes the line (no promise per record on the fast path). */
  const produce = async (value: Buffer): Promise<void> => {
    while (!tryProduce(value)) {
      producer.poll();
      await reported();
    }
  };

  let stopping = false;
  process.once('SIGTERM', () => {
    stopping = true;
  });
  const handle = await open(file, 'r');
  let partial: Buffer | undefined;
  let eof = false;
  while (!stopping) {
    // The bound is checked per 64 KiB read, as Tributary's runner checks it per poll round (and
    // goes over it by at most one round): a check per line would wake the loop every other record.
    while (maxInFlight > 0 && handed - delivered >= maxInFlight) {
      producer.poll();
      await reported();
    }
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
      if (!tryProduce(line)) await produce(line);
      from = newline + 1;
    }
  }
  if (eof && partial !== undefined && partial.length > 0) await produce(partial);
  await handle.close();
  while (delivered < handed) await reported();
  await new Promise<void>((resolve) => producer.disconnect(() => resolve()));
  process.stderr.write(`sent ${handed} records${failed > 0 ? `, ${failed} FAILED (${firstError})` : ''}\n`);
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
