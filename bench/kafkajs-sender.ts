/**
 * KafkajsSender, and the whole task pipeline on it, against a hand-written kafkajs batching
 * loop with the same settings.
 *
 *   npx tsx bench/kafkajs-sender.ts [--records=200000] [--value-bytes=100] [--partitions=3]
 *     [--batch-records=1000] [--batch-bytes=524288] [--linger=5] [--in-flight=1]
 *     [--idempotent=true] [--acks=all] [--rounds=1]
 *
 * Starts its own single-node broker (test/kafka/broker.ts) unless KAFKA_BOOTSTRAP_SERVERS is
 * set. Each measurement runs in a child process of its own, so its peak RSS is its own:
 *
 * - `sender`: records handed one by one to `KafkajsSender.send` (a fresh 100-byte value each),
 *   at most 5 batches' worth unacknowledged at a time (as the runtime's in-flight bound would),
 *   then `flush()`.
 * - `raw`: the same records gathered into arrays of `batch-records` records / `batch-bytes`
 *   bytes and given to `producer.sendBatch` directly, with at most `in-flight` calls outstanding
 *   and the same acks, idempotence and partitioner: the best a caller of kafkajs can do without
 *   linger, callbacks or retries of its own.
 *
 * - `runtime`: a synthetic source task (rounds of `batch-records` records with the same
 *   100-byte values, `bytes` converter, 3 source partitions) run by the TaskRunner on a
 *   KafkajsSender, until every record is acknowledged and the final offset flush (to an
 *   in-memory store) is done: what the runtime adds on top of the sender.
 *
 * All warm up with 10% of the records (not counted) on the same producer before measuring.
 * Prints records/s, elapsed time and peak RSS of each, and sender/raw ratios.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as t from 'io-ts';
import type { Message } from 'kafkajs';
import { from, type Observable } from 'rxjs';
import { offsetCodec, type SourceRecord, SourceTask } from '../src/index.js';
// kafkajs as the worker loads it (with its fixes), for both sides of the comparison.
import { Kafka, logLevel } from '../src/kafka/kafkajs-fixes.js';
import { KafkajsSender } from '../src/kafka/kafkajs-sender.js';
import { kafkajsClientOptions, type ResolvedProducerConfig, resolveProducerConfig } from '../src/kafka/producer-config.js';
import { retryStablePartitioner } from '../src/kafka/retry-stable-partitioner.js';
import type { SendCallback } from '../src/runtime/ports.js';
import { TaskRunner } from '../src/runtime/task-runner.js';
import { resolveTaskSettings } from '../src/runtime/task-settings.js';
import { MemoryOffsetStore } from '../src/storage/memory-offset-store.js';
import { startBroker } from '../test/kafka/broker.js';

/** A source of `total` records in rounds of `batch`, over 3 source partitions; offsets count records per partition. */
class SyntheticTask extends SourceTask<{ p: number }, { n: number }, null> {
  readonly offsets = offsetCodec({ partition: t.type({ p: t.number }), offset: t.type({ n: t.number }) });
  produced = 0;
  private readonly partitions = [{ p: 0 }, { p: 1 }, { p: 2 }];
  private readonly counts = [0, 0, 0];
  constructor(
    private readonly total: number,
    private readonly batch: number,
    private readonly value: (i: number) => Buffer,
  ) {
    super();
  }
  start(): void {}
  poll(): Observable<SourceRecord<{ p: number }, { n: number }>> {
    const n = Math.min(this.batch, this.total - this.produced);
    const out = new Array<SourceRecord<{ p: number }, { n: number }>>(n);
    for (let k = 0; k < n; k++) {
      const i = this.produced + k;
      const p = i % 3;
      this.counts[p] = (this.counts[p] as number) + 1;
      out[k] = {
        sourcePartition: this.partitions[p] as { p: number },
        sourceOffset: { n: this.counts[p] as number },
        topic: TOPIC.name,
        value: this.value(i),
      };
    }
    this.produced += n;
    return from(out);
  }
}
const TOPIC = { name: '' };

interface Options {
  records: number;
  valueBytes: number;
  partitions: number;
  batchRecords: number;
  batchBytes: number;
  linger: number;
  inFlight: number;
  idempotent: boolean;
  acks: string;
  rounds: number;
}

type Mode = 'sender' | 'raw' | 'runtime';
const MODES: readonly Mode[] = ['raw', 'sender', 'runtime'];

interface Result {
  mode: Mode;
  records: number;
  elapsedMs: number;
  recordsPerSec: number;
  peakRssMiB: number;
  baseRssMiB: number;
  errors: number;
}

function parseArgs(argv: readonly string[]): Options & { child?: string; bootstrap?: string; topic?: string } {
  const get = (name: string): string | undefined => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const num = (name: string, fallback: number): number => {
    const v = get(name);
    return v === undefined ? fallback : Number(v);
  };
  return {
    records: num('records', 200_000),
    valueBytes: num('value-bytes', 100),
    partitions: num('partitions', 3),
    batchRecords: num('batch-records', 1000),
    batchBytes: num('batch-bytes', 512 * 1024),
    linger: num('linger', 5),
    inFlight: num('in-flight', 1),
    idempotent: (get('idempotent') ?? 'true') === 'true',
    acks: get('acks') ?? 'all',
    rounds: num('rounds', 1),
    child: get('child'),
    bootstrap: get('bootstrap'),
    topic: get('topic'),
  };
}

function producerConfig(o: Options): ResolvedProducerConfig {
  return resolveProducerConfig(
    {
      'producer.batch.max.records': String(o.batchRecords),
      'producer.batch.size': String(o.batchBytes),
      'producer.linger.ms': String(o.linger),
      'producer.max.in.flight.requests.per.connection': String(o.inFlight),
      'producer.enable.idempotence': String(o.idempotent),
      'producer.acks': o.acks,
    },
    {},
    { connector: 'bench' },
  );
}

const mib = (kib: number): number => Math.round((kib / 1024) * 10) / 10;

/** Child: runs one mode and reports a {@link Result} to the parent. */
async function child(mode: Mode, o: Options, bootstrap: string, topic: string): Promise<Result> {
  const config = producerConfig(o);
  const kafka = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING, ...kafkajsClientOptions(config) });
  const warmup = Math.max(1000, Math.floor(o.records / 10));
  const value = (i: number): Buffer => Buffer.alloc(o.valueBytes, i & 0xff);
  let errors = 0;
  let measure: (n: number) => Promise<number>;
  let done: () => Promise<void>;

  if (mode === 'runtime') {
    TOPIC.name = topic;
    const sender = new KafkajsSender({ kafka, config });
    await sender.connect();
    const settings = resolveTaskSettings({ 'value.converter': 'bytes', 'task.poll.backoff.ms': '1' }, {});
    measure = async (n) => {
      const store = new MemoryOffsetStore();
      const task = new SyntheticTask(n, o.batchRecords, value);
      const runner = new TaskRunner({ connector: 'bench', taskId: 0, task, config: null, settings, sender, offsetStore: store });
      const start = performance.now();
      await runner.start();
      while (task.produced < n || runner.inFlight > 0) await new Promise((r) => setTimeout(r, 1));
      await runner.stop();
      const elapsed = performance.now() - start;
      if (runner.status.state !== 'STOPPED') errors += n;
      const last = (await store.read('bench')).reduce((sum, e) => sum + Number(e.offset?.n ?? 0), 0);
      if (last !== n) errors += n - last;
      return elapsed;
    };
    done = () => sender.close();
  } else if (mode === 'sender') {
    const sender = new KafkajsSender({ kafka, config });
    await sender.connect();
    const highWater = 5 * o.batchRecords;
    let acked = 0;
    let sent = 0;
    let wake: (() => void) | undefined;
    const onDone: SendCallback = (error) => {
      if (error !== undefined) errors++;
      acked++;
      if (wake !== undefined && sent - acked < highWater) {
        const w = wake;
        wake = undefined;
        w();
      }
    };
    measure = async (n) => {
      const start = performance.now();
      for (let i = 0; i < n; i++) {
        if (sent - acked >= highWater) await new Promise<void>((r) => (wake = r));
        sender.send({ topic, key: null, value: value(i) }, onDone);
        sent++;
      }
      await sender.flush();
      return performance.now() - start;
    };
    done = () => sender.close();
  } else {
    const producer = kafka.producer({
      createPartitioner: retryStablePartitioner,
      idempotent: config.idempotent,
      maxInFlightRequests: config.maxInFlight,
    });
    await producer.connect();
    measure = async (n) => {
      const start = performance.now();
      const outstanding = new Set<Promise<unknown>>();
      let i = 0;
      while (i < n) {
        const messages: Message[] = [];
        let bytes = 0;
        while (i < n && messages.length < config.batchMaxRecords && bytes < config.batchSizeBytes) {
          const v = value(i);
          messages.push({ key: null, value: v });
          bytes += v.length;
          i++;
        }
        const p = producer
          .sendBatch({ topicMessages: [{ topic, messages }], acks: config.acks, timeout: config.requestTimeoutMs })
          .catch(() => {
            errors += messages.length;
          })
          .finally(() => outstanding.delete(p));
        outstanding.add(p);
        if (outstanding.size >= config.maxInFlight) await Promise.race(outstanding);
      }
      await Promise.all(outstanding);
      return performance.now() - start;
    };
    done = () => producer.disconnect();
  }

  const baseRssMiB = mib(process.resourceUsage().maxRSS);
  await measure(warmup);
  const elapsedMs = await measure(o.records);
  await done();
  return {
    mode,
    records: o.records,
    elapsedMs: Math.round(elapsedMs),
    recordsPerSec: Math.round((o.records / elapsedMs) * 1000),
    peakRssMiB: mib(process.resourceUsage().maxRSS),
    baseRssMiB,
    errors,
  };
}

function runChild(mode: Mode, argv: readonly string[], bootstrap: string, topic: string): Promise<Result> {
  return new Promise((resolve, reject) => {
    const proc = fork(
      fileURLToPath(import.meta.url),
      [...argv, `--child=${mode}`, `--bootstrap=${bootstrap}`, `--topic=${topic}`],
      {
        execArgv: process.execArgv,
      },
    );
    let result: Result | undefined;
    proc.on('message', (m) => {
      result = m as Result;
    });
    proc.on('error', reject);
    proc.on('exit', (code) => {
      if (result !== undefined) resolve(result);
      else reject(new Error(`${mode} child exited with ${code} and no result`));
    });
  });
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const o = parseArgs(argv);
  if (MODES.includes(o.child as Mode)) {
    const result = await child(o.child as Mode, o, o.bootstrap ?? '', o.topic ?? '');
    process.send?.(result);
    return;
  }

  const external = process.env.KAFKA_BOOTSTRAP_SERVERS?.trim();
  const broker = external ? undefined : await startBroker({ heapMb: 1024 });
  const bootstrap = external || (broker?.bootstrapServers as string);
  try {
    const admin = new Kafka({ brokers: bootstrap.split(','), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    console.log(
      `kafkajs-sender bench: ${o.records} records of ${o.valueBytes} B, ${o.partitions} partitions, batch ${o.batchRecords} records / ${o.batchBytes} B, ` +
        `linger ${o.linger} ms, in-flight ${o.inFlight}, idempotent ${o.idempotent}, acks ${o.acks}, broker ${bootstrap}${external ? ' (external)' : ' (own)'}`,
    );
    const results: Result[] = [];
    for (let round = 0; round < o.rounds; round++) {
      // Alternate the order so that neither mode always runs on a warmer broker.
      const modes: Mode[] = round % 2 === 0 ? [...MODES] : [...MODES].reverse();
      for (const mode of modes) {
        const topic = `bench-kafkajs-sender-${mode}-${Date.now().toString(36)}`;
        await admin.createTopics({ topics: [{ topic, numPartitions: o.partitions }], waitForLeaders: true });
        const r = await runChild(mode, argv, bootstrap, topic);
        results.push(r);
        console.log(
          `  ${mode.padEnd(6)} ${String(r.recordsPerSec).padStart(8)} records/s  ${String(r.elapsedMs).padStart(6)} ms  ` +
            `peak RSS ${r.peakRssMiB} MiB (${r.baseRssMiB} MiB before sending)${r.errors > 0 ? `  ${r.errors} ERRORS` : ''}`,
        );
        await admin.deleteTopics({ topics: [topic] }).catch(() => {});
      }
    }
    await admin.disconnect();
    const best = (mode: Mode): Result =>
      results.filter((r) => r.mode === mode).sort((a, b) => b.recordsPerSec - a.recordsPerSec)[0] as Result;
    const r = best('raw');
    console.log(`best of ${o.rounds} (ratios against raw kafkajs):`);
    for (const mode of MODES) {
      const b = best(mode);
      console.log(
        `  ${mode.padEnd(8)} ${String(b.recordsPerSec).padStart(8)} records/s (x${(b.recordsPerSec / r.recordsPerSec).toFixed(2)})  ` +
          `peak RSS ${b.peakRssMiB} MiB (x${(b.peakRssMiB / r.peakRssMiB).toFixed(2)})`,
      );
    }
  } finally {
    await broker?.destroy();
  }
}

await main();
