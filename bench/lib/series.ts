/**
 * The series of issue 14: how the steady rate (and peak RSS) changes with one thing at a time.
 * Every point is one time-bounded run (`--seconds` after its first record, or less when its
 * input runs out; see bench/lib/measure-run.ts), against the same broker as the main table:
 *
 * - `partitions`: Tributary with the synthetic task (bench/lib/synthetic-connector.ts) cycling
 *   through N source partitions (1, 100, 10,000, 100,000): the offset tracking's cost;
 * - `sizes`: every contender on lines of 100 B, 1 KiB, 10 KiB;
 * - `tasks`: K connectors of one task each, all reading the same file, into one topic of K
 *   partitions, Kafka Connect's FileStreamSource beside Tributary's file source (FileStreamSource
 *   has one task per file, so K connectors is what both sides can do alike);
 * - `rss`: peak RSS of complete runs of 1M and 5M records (flat in the number of records), and
 *   of a time-bounded run against a slow broker (a `producer_byte_rate` quota), which must stay
 *   near the in-flight bound instead of growing with the input read.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_MAX_IN_FLIGHT_RECORDS } from '../../src/runtime/task-settings.js';
import { WORK_DIR } from '../connect/fetch.js';
import type { Contender } from '../contenders/contender.js';
import { kafkaConnect } from '../contenders/kafka-connect.js';
import { kafkajsRaw } from '../contenders/kafkajs-raw.js';
import { librdkafkaRaw } from '../contenders/librdkafka-raw.js';
import { producerPerformance } from '../contenders/producer-perf.js';
import { syntheticTributary } from '../contenders/synthetic.js';
import { tributary } from '../contenders/tributary.js';
import { setProducerQuota } from './broker-quota.js';
import type { BenchBuild } from './build.js';
import { ensureInputFile } from './input-file.js';
import { measureRun, type RunEnvironment, type RunResult } from './measure-run.js';
import type { BenchSettings, SeriesId } from './settings.js';

/** One measured point of a series. */
export interface SeriesPoint {
  /** The value of the varied quantity (partitions, bytes, tasks, records). */
  readonly x: number;
  /** What the line in the chart is (contender label, or the run's kind in the rss series). */
  readonly line: string;
  readonly result: RunResult;
}

/** A series: its points and what to say beside them. */
export interface SeriesResult {
  readonly id: SeriesId;
  readonly title: string;
  /** Name of the varied quantity, for table headers and the chart's x axis. */
  readonly xName: string;
  readonly points: readonly SeriesPoint[];
  readonly notes: readonly string[];
  /** The rss series: the slow-broker runs, with the RSS over time and the bound. */
  readonly slow?: readonly SlowBrokerRun[];
}

/** One slow-broker run of the rss series. */
export interface SlowBrokerRun {
  readonly line: string;
  readonly result: RunResult;
  readonly quotaBytesPerSec: number;
  readonly inFlightRecords: number;
  readonly lineBytes: number;
  readonly inputBytes: number;
  /** The process tree's RSS at 25%, 50%, 75% and 100% of the run, MiB. */
  readonly rssAtQuarters: readonly number[];
}

/** What the series need from the harness. */
export interface SeriesContext {
  readonly settings: BenchSettings;
  readonly env: Omit<RunEnvironment, 'inputFile' | 'inputBytes' | 'records' | 'lineBytes'>;
  readonly built: BenchBuild;
  readonly java: { java: string; libs: string; version: string } | undefined;
  readonly librdkafka: boolean;
  readonly say: (line: string) => void;
}

/**
 * Lines of a series input file: enough for `seconds` at up to 400,000 records/s or 100 MB/s,
 * whichever is less (a contender that is faster finishes the file early; its steady window is
 * then 10% to 90% of the file). 30 s: 1.2 GB at 100 B, 3 GB at 1 KiB and at 10 KiB.
 */
export function seriesLines(seconds: number, lineBytes: number): number {
  return Math.ceil(seconds * Math.min(400_000, 100e6 / (lineBytes + 1)));
}

/** Runs the selected series, in a fixed order. */
export async function runSeries(ctx: SeriesContext): Promise<SeriesResult[]> {
  const out: SeriesResult[] = [];
  const { series } = ctx.settings;
  if (series.has('partitions')) out.push(await partitionsSeries(ctx));
  if (series.has('sizes')) out.push(await sizesSeries(ctx));
  if (series.has('tasks')) out.push(await tasksSeries(ctx));
  if (series.has('rss')) out.push(await rssSeries(ctx));
  return out;
}

async function input(
  ctx: SeriesContext,
  records: number,
  lineBytes: number,
): Promise<Pick<RunEnvironment, 'inputFile' | 'inputBytes' | 'records' | 'lineBytes'>> {
  ctx.say(`  input: ${records.toLocaleString('en-US')} lines of ${lineBytes} B ...`);
  const inputFile = await ensureInputFile(join(WORK_DIR, 'input'), records, lineBytes);
  return { inputFile, inputBytes: (await stat(inputFile)).size, records, lineBytes };
}

async function point(
  ctx: SeriesContext,
  contender: Contender,
  env: RunEnvironment,
  x: number,
  line: string,
): Promise<SeriesPoint> {
  const r = await measureRun(contender, 0, env);
  ctx.say(
    `  ${line.padEnd(34)} ${String(x).padStart(7)}  steady ${Math.round(r.steadyPerSec ?? Number.NaN)
      .toLocaleString('en-US')
      .padStart(9)} rec/s  ` +
      `${r.records.toLocaleString('en-US')} records in ${(r.stoppedAfterS ?? r.wallS).toFixed(1)} s  RSS ${r.peakRssMiB.toFixed(0)} MiB  ` +
      `${r.ok ? 'ok' : `FAILED: ${r.problems.join('; ')}`}`,
  );
  return { x, line, result: r };
}

/** Series settings: the main table's, with another line size. */
function sized(settings: BenchSettings, lineBytes: number): BenchSettings {
  return { ...settings, lineBytes };
}

async function partitionsSeries(ctx: SeriesContext): Promise<SeriesResult> {
  const { settings } = ctx;
  ctx.say(`series partitions: ${settings.partitionCounts.join(', ')} source partitions, ${settings.seconds} s each`);
  const records = seriesLines(settings.seconds, settings.lineBytes);
  // The synthetic task reads no file; the environment still names one (the 100 B series input is not needed).
  const env: RunEnvironment = {
    ...ctx.env,
    inputFile: '/dev/null',
    inputBytes: 0,
    records,
    lineBytes: settings.lineBytes,
    stopAfterS: settings.seconds,
  };
  const senders = [
    ...(settings.only.has('tributary') ? [false] : []),
    ...(settings.only.has('librdkafka') && ctx.librdkafka ? [true] : []),
  ];
  const points: SeriesPoint[] = [];
  for (const n of settings.partitionCounts) {
    for (const librdkafka of senders) {
      const c = syntheticTributary(settings, ctx.built.tributaryCli, ctx.built.syntheticSource, n, librdkafka);
      points.push(await point(ctx, c, env, n, librdkafka ? 'Tributary, sender=librdkafka' : 'Tributary'));
    }
  }
  return {
    id: 'partitions',
    title: 'Steady records/s and peak RSS against the source partitions one task writes',
    xName: 'source partitions',
    points,
    notes: [
      `Tributary's standalone worker with the synthetic task (bench/lib/synthetic-connector.ts): one task, records of ${settings.lineBytes} B ` +
        '(string values, null keys) cycling through N source partitions, so each record moves another partition than the one before; ' +
        `1-partition topic, the main table's worker and producer settings, file offsets flushed every ${settings.flushIntervalMs} ms (every partition's offset is in the file). ` +
        `Each run stops ${settings.seconds} s after its first record; the committed offsets must add up to the records in the topic.`,
    ],
  };
}

async function sizesSeries(ctx: SeriesContext): Promise<SeriesResult> {
  const { settings } = ctx;
  ctx.say(`series sizes: ${settings.sizes.join(', ')} B, ${settings.seconds} s each`);
  const points: SeriesPoint[] = [];
  for (const size of settings.sizes) {
    const s = sized(settings, size);
    const files = await input(ctx, seriesLines(settings.seconds, size), size);
    const env: RunEnvironment = { ...ctx.env, ...files, stopAfterS: settings.seconds };
    for (const c of fileContenders(ctx, s)) points.push(await point(ctx, c, env, size, c.label));
  }
  return {
    id: 'sizes',
    title: 'Steady records/s against the record size',
    xName: 'record bytes',
    points,
    notes: [
      "The main table's job (file source, 1-partition topic, same settings on every side) on lines of each size, " +
        `each run stopped ${settings.seconds} s after its first record (or at the end of its file: ${seriesLines(settings.seconds, 100).toLocaleString('en-US')} lines at 100 B, ` +
        'enough for 30 s at 400,000 records/s or 100 MB/s). MB/s = steady records/s × record bytes.',
    ],
  };
}

/** The file-reading contenders of the sizes series (and ProducerPerformance), as --only selects. */
function fileContenders(ctx: SeriesContext, s: BenchSettings): Contender[] {
  const { built, java } = ctx;
  const out: Contender[] = [];
  if (java !== undefined && s.only.has('connect')) out.push(kafkaConnect(s, java.java, java.libs, java.version));
  if (s.only.has('tributary')) out.push(tributary(s, built.tributaryCli, built.fileSource, s.nodeOptions));
  if (s.only.has('librdkafka') && ctx.librdkafka)
    out.push(tributary(s, built.tributaryCli, built.fileSource, s.nodeOptions, true));
  if (s.only.has('kafkajs')) out.push(kafkajsRaw(s, built.kafkajsRaw, s.nodeOptions));
  if (s.only.has('librdkafka-raw') && ctx.librdkafka) out.push(librdkafkaRaw(s, built.librdkafkaRaw, s.nodeOptions));
  if (java !== undefined && s.only.has('perf'))
    out.push(producerPerformance(s, java.java, java.libs, java.version, s.producer.tributaryBatchBytes));
  return out;
}

async function tasksSeries(ctx: SeriesContext): Promise<SeriesResult> {
  const { settings, built, java } = ctx;
  ctx.say(`series tasks: ${settings.taskCounts.join(', ')} tasks, ${settings.seconds} s each`);
  const files = await input(ctx, seriesLines(settings.seconds, settings.lineBytes), settings.lineBytes);
  const points: SeriesPoint[] = [];
  for (const k of settings.taskCounts) {
    const env: RunEnvironment = { ...ctx.env, ...files, stopAfterS: settings.seconds, partitions: k, copies: k };
    const contenders: Contender[] = [];
    if (java !== undefined && settings.only.has('connect'))
      contenders.push(kafkaConnect(settings, java.java, java.libs, java.version));
    if (settings.only.has('tributary')) contenders.push(tributary(settings, built.tributaryCli, built.fileSource));
    if (settings.only.has('librdkafka') && ctx.librdkafka)
      contenders.push(tributary(settings, built.tributaryCli, built.fileSource, [], true));
    for (const c of contenders) points.push(await point(ctx, c, env, k, c.label));
  }
  return {
    id: 'tasks',
    title: 'Steady records/s against tasks (= topic partitions), Tributary beside Kafka Connect',
    xName: 'tasks',
    points,
    notes: [
      'K connectors with one task each (FileStreamSource has one task per file, so this is what both workers can do alike), ' +
        `all reading the same file of ${settings.lineBytes} B lines (each connector keeps its own offset), in one worker process, ` +
        "into one topic of K partitions (null keys: the Java producer's sticky partitioner, Tributary's own), each task its own producer. " +
        `Steady records/s is the sum over the tasks (the topic's total); each run stops ${settings.seconds} s after its first record; ` +
        'the committed positions must add up to the records in the topic. Two cores are shared with the broker, so more tasks cannot mean more CPU.',
    ],
  };
}

async function rssSeries(ctx: SeriesContext): Promise<SeriesResult> {
  const { settings, built, java } = ctx;
  ctx.say(`series rss: complete runs of ${settings.rssRecords.join(', ')} records, then a slow broker for ${settings.seconds} s`);
  const senders = [
    ...(settings.only.has('tributary') ? [false] : []),
    ...(settings.only.has('librdkafka') && ctx.librdkafka ? [true] : []),
  ];
  const label = (librdkafka: boolean) => (librdkafka ? 'Tributary, sender=librdkafka' : 'Tributary');
  const points: SeriesPoint[] = [];
  for (const records of settings.rssRecords) {
    const env: RunEnvironment = { ...ctx.env, ...(await input(ctx, records, settings.lineBytes)) };
    for (const librdkafka of senders) {
      const c = tributary(settings, built.tributaryCli, built.fileSource, settings.nodeOptions, librdkafka);
      points.push(await point(ctx, c, env, records, label(librdkafka)));
    }
  }
  const slow: SlowBrokerRun[] = [];
  const inFlightRecords = Number(settings.tributarySet['task.max.in.flight.records'] ?? DEFAULT_MAX_IN_FLIGHT_RECORDS);
  if (java === undefined) {
    ctx.say('  slow broker skipped: it needs Java and the Kafka Connect jars (their Admin client sets the quota)');
  } else {
    const clientId = 'bench-slow-broker';
    const files = await input(ctx, seriesLines(settings.seconds, settings.lineBytes), settings.lineBytes);
    const env: RunEnvironment = { ...ctx.env, ...files, stopAfterS: settings.seconds };
    await setProducerQuota(java.java, java.libs, ctx.env.bootstrap, clientId, settings.slowBrokerBytesPerSec);
    try {
      for (const librdkafka of senders) {
        const s: BenchSettings = { ...settings, tributarySet: { ...settings.tributarySet, 'producer.client.id': clientId } };
        const c = tributary(s, built.tributaryCli, built.fileSource, settings.nodeOptions, librdkafka);
        const p = await point(ctx, c, env, settings.slowBrokerBytesPerSec, `${label(librdkafka)}, slow broker`);
        const samples = p.result.rssSamples;
        const end = samples.at(-1)?.[0] ?? 0;
        const at = (f: number) => samples.find(([t]) => t >= end * f)?.[1] ?? Number.NaN;
        slow.push({
          line: p.line,
          result: p.result,
          quotaBytesPerSec: settings.slowBrokerBytesPerSec,
          inFlightRecords,
          lineBytes: settings.lineBytes,
          inputBytes: files.inputBytes,
          rssAtQuarters: [at(0.25), at(0.5), at(0.75), at(1)],
        });
      }
    } finally {
      await setProducerQuota(java.java, java.libs, ctx.env.bootstrap, clientId, undefined).catch(() => {});
    }
  }
  return {
    id: 'rss',
    title: 'Peak RSS against the records written, and with a slow broker',
    xName: 'records',
    points,
    slow,
    notes: [
      `Complete runs of the main table's job (${settings.lineBytes} B lines, to the end of the file, the usual checks) with ${settings.rssRecords.map((r) => r.toLocaleString('en-US')).join(' and ')} records: ` +
        'peak RSS should not grow with the input.',
      `Slow broker: a producer_byte_rate quota of ${settings.slowBrokerBytesPerSec.toLocaleString('en-US')} bytes/s on the producer's client.id ` +
        '(the broker delays its answers and mutes the connection), the same job on a file far larger than can be sent meanwhile, ' +
        `stopped ${settings.seconds} s after its first record. The source pauses while ${inFlightRecords.toLocaleString('en-US')} records ` +
        "(task.max.in.flight.records) are sent and not acknowledged, so RSS must stay flat over the run, near the fast runs' figure, not grow toward the file's size.",
    ],
  };
}
