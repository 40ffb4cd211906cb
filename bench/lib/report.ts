/**
 * The results as Markdown: the steady-state table of medians with the ratios issue 14 aims at,
 * the settings of every side, the heartbeat timing, the series, every run, and how it was measured.
 */
import type { Contender, ContenderId } from '../contenders/contender.js';
import type { HeartbeatResult } from './heartbeat-run.js';
import type { RunResult } from './measure-run.js';
import type { SeriesResult } from './series.js';
import { seriesMarkdown } from './series-report.js';
import { ratio, ratioOf, type Summary } from './summary.js';

/** Facts about the machine and the run, for the header. */
export interface ReportMeta {
  readonly date: string;
  readonly command: string;
  readonly machine: string;
  readonly node: string;
  readonly java: string;
  readonly brokerVersion: string;
  readonly connectVersion: string;
  readonly records: number;
  readonly lineBytes: number;
  readonly runs: number;
  readonly loadAtStart: readonly number[];
  /** After waiting for the load to drop, when the first run started. */
  readonly loadAtMeasureStart: readonly number[];
  readonly loadAtEnd: readonly number[];
  /** The git commit of the sources measured. */
  readonly revision: string;
  readonly durationS: number;
  readonly chartFile: string | undefined;
  readonly flushIntervalMs: number;
  readonly tributaryFrom: string | undefined;
  readonly kafkajs: string;
}

const int = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–');
const fix = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '–');
const times = (n: number): string => (Number.isFinite(n) ? `×${n.toFixed(2)}` : '–');

/** The table of medians, as printed and as written: steady state first, start-up in its own column. */
export function summaryTable(summaries: readonly Summary[]): string {
  const rows = [
    '| | steady records/s | vs Connect | start-up s (first record) | records/s (wall) | wall s | CPU s | µs CPU/record | CPU vs Connect | peak RSS MiB | RSS vs Connect | stop + commit s | broker CPU s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const s of summaries) {
    rows.push(
      `| ${s.label}${s.okRuns < s.runs ? ` (${s.runs - s.okRuns} of ${s.runs} runs FAILED)` : ''} | ${int(s.steadyPerSec)} | ` +
        `${times(ratio(summaries, s, (x) => x.steadyPerSec))} | ${fix(s.firstRecordS, 2)} | ${int(s.recordsPerSec)} | ${fix(s.wallS, 2)} | ` +
        `${fix(s.cpuS, 2)} | ${fix(s.cpuUsPerRecord, 1)} | ${times(ratio(summaries, s, (x) => x.cpuS))} | ${fix(s.peakRssMiB, 0)} | ` +
        `${times(ratio(summaries, s, (x) => x.peakRssMiB))} | ${fix(s.stopS, 2)} | ${fix(s.brokerCpuS, 2)} |`,
    );
  }
  return rows.join('\n');
}

/** The ratios issue 14 aims at, all of steady records/s. */
export function ratiosTable(summaries: readonly Summary[]): string {
  const row = (name: string, a: ContenderId, b: ContenderId, aim: string) =>
    `| ${name} | ${times(ratioOf(summaries, a, b))} | ${aim} |`;
  return [
    '| steady records/s | ratio | aim |',
    '|---|---:|---|',
    row('Tributary (kafkajs sender) / raw kafkajs, same batches', 'tributary', 'kafkajs', '≥ ×0.90'),
    row('Tributary sender=librdkafka / raw librdkafka, same settings', 'tributary-librdkafka', 'librdkafka-raw', '≥ ×0.90'),
    row('Tributary sender=librdkafka / Kafka Connect', 'tributary-librdkafka', 'connect', '≥ ×1.00'),
    row('Tributary (kafkajs sender) / Kafka Connect', 'tributary', 'connect', '–'),
    row('Tributary (kafkajs sender) / raw kafkajs 2.2.4 as published', 'tributary', 'kafkajs-published', '–'),
    row('raw librdkafka / raw kafkajs', 'librdkafka-raw', 'kafkajs', '–'),
  ].join('\n');
}

/** A run's CPU by thread (results files older than the column have none). */
function threads(t: RunResult['threadCpu'] | undefined): string {
  return t === undefined ? '–' : `${fix(t.mainS, 2)} / ${fix(t.busiestOtherS, 2)} / ${fix(t.restS, 2)}`;
}

/** Every run, for the record. */
export function runsTable(results: readonly RunResult[]): string {
  const rows = [
    '| contender | run | load before | wall s | records | records/s | steady records/s | steady window s | N / (all − first) | CPU s | CPU s: main / busiest other thread / rest | peak RSS MiB | first record s | stop + commit s | uncommitted at stop | broker CPU s | exit | check |',
    '|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---|---|',
  ];
  for (const r of results) {
    rows.push(
      `| ${r.label} | ${r.run} | ${fix(r.loadBefore, 2)} | ${fix(r.wallS, 2)} | ${int(r.records)} | ${int(r.recordsPerSec)} | ${int(r.steadyPerSec ?? Number.NaN)} | ` +
        `${fix(r.steadyFromS ?? Number.NaN, 2)} – ${fix(r.steadyToS ?? Number.NaN, 2)} | ${int(r.firstToAllPerSec ?? Number.NaN)} | ` +
        `${fix(r.cpuS, 2)} | ${threads(r.threadCpu)} | ${fix(r.peakRssMiB, 0)} | ${fix(r.firstRecordS ?? Number.NaN, 2)} | ${fix(r.stopS ?? Number.NaN, 2)} | ` +
        `${int(r.uncommittedRecords ?? Number.NaN)} | ` +
        `${fix(r.brokerCpuS ?? Number.NaN, 2)} | ${r.exit} | ${r.ok ? 'ok' : r.problems.join('; ')} |`,
    );
  }
  return rows.join('\n');
}

/** The heartbeat figures. */
export function heartbeatTable(h: HeartbeatResult): string {
  const row = (name: string, d: HeartbeatResult['timer']) =>
    `| ${name} | ${d.intervals} | ${fix(d.p50, 0)} | ${fix(d.p99, 0)} | ${fix(d.max, 0)} | ${fix(d.minInterval, 0)} – ${fix(d.maxInterval, 0)} |`;
  return [
    '| heartbeat time taken from | intervals | p50 \\|interval − 1000\\| ms | p99 ms | max ms | intervals min – max ms |',
    '|---|---:|---:|---:|---:|---|',
    row('timer tick (value written by produceHeartbeatRecords)', h.timer),
    row('broker append (LogAppendTime)', h.appended),
  ].join('\n');
}

export function markdownReport(
  meta: ReportMeta,
  contenders: readonly Contender[],
  summaries: readonly Summary[],
  results: readonly RunResult[],
  heartbeat: HeartbeatResult | undefined,
  series: readonly SeriesResult[] = [],
  charts: { readonly heartbeat?: string; readonly series: Readonly<Record<string, string>> } = { series: {} },
): string {
  const load = (l: readonly number[]) => l.map((x) => x.toFixed(2)).join(', ');
  const lines: string[] = [
    `# Tributary vs Kafka Connect: file source to Kafka, ${meta.date}`,
    '',
    `${int(meta.records)} lines of ${meta.lineBytes} bytes (each starting with its sequence number) from one file into a`,
    `one-partition topic on one local broker, one task, \`acks=all\`, no compression. Medians of ${meta.runs} run(s)`,
    'per contender, each in its own process, one at a time, the topic created fresh for every run.',
    '',
    `- Command: \`${meta.command}\` (took ${Math.round(meta.durationS)} s)`,
    `- Tributary at ${meta.revision}${meta.tributaryFrom === undefined ? '' : ` (built from ${meta.tributaryFrom})`}; kafkajs ${meta.kafkajs}`,
    `- Machine: ${meta.machine}; load average (1, 5, 15 min) at start ${load(meta.loadAtStart)}, when the first run began ` +
      `${load(meta.loadAtMeasureStart)}, at the end ${load(meta.loadAtEnd)}. The broker and the contender keep both cores ` +
      'busy, so a 1-minute load of about 2 during the runs is the benchmark itself; the load before each run is in the last table.',
    `- ${meta.node}; ${meta.java}; broker Apache Kafka ${meta.brokerVersion} (test/kafka/broker.ts, KRaft, single node); ` +
      `Kafka Connect and ProducerPerformance ${meta.connectVersion}`,
  ];
  if (meta.connectVersion !== meta.brokerVersion) {
    lines.push(
      `- Kafka Connect is ${meta.connectVersion}, not ${meta.brokerVersion}: Maven Central has no connect-file ${meta.brokerVersion}, ` +
        'and an older connect-file does not load on a newer runtime (see bench/connect/fetch.ts).',
    );
  }
  if (summaries.length > 0) {
    lines.push('', '## Steady state', '', summaryTable(summaries), '', ratiosTable(summaries), '');
    if (meta.chartFile !== undefined)
      lines.push(`![steady records/s, CPU seconds and peak RSS per contender](${meta.chartFile})`, '');
    lines.push(
      '**Steady records/s** is the headline: records per second between the moments the topic held 10% and 90%',
      "of the run's records (the harness polls the end offsets every 50 ms and interpolates between polls), so",
      "neither start-up (process start, a JVM's warm-up, the first metadata round trips) nor the final drain and",
      'stop is in it; a connector runs for days, and this is its rate once running. **start-up s** is process',
      'start to the first record in the topic, its own column. **records/s (wall)** = records / wall s, start',
      'to exit, start-up and the final commit included: short runs favour the side that starts fastest.',
      '**wall s** from process start to process exit, after every record is in the topic and, for the',
      'two workers, the final offset commit (stopped with SIGTERM once the last record is in the topic);',
      '**CPU s** user + system of the process (all threads); **peak RSS** the largest resident set',
      '(VmHWM); **stop + commit s** from the last record in the topic to the exit; **broker CPU s** what the',
      'broker spent meanwhile. "vs Connect" ratios are against Kafka Connect (records/s: higher is better; CPU',
      'and RSS: lower is better). The window of every run, and the older figure N / (all in topic − first record),',
      'are in the last table.',
      '',
    );
  }
  lines.push(
    '## Settings',
    '',
    "Same on every side: the same input file (in the page cache), null keys, values = the line's bytes,",
    "`acks=all`, `max.in.flight.requests.per.connection=1`, `enable.idempotence=false` (Kafka Connect's",
    `source-producer defaults, set explicitly), \`compression.type=none\`, linger 5 ms; both workers:`,
    `\`offset.flush.interval.ms=${meta.flushIntervalMs}\`, file offsets store, REST listener on, INFO logging. Batching is each`,
    "side's own, as listed below (kafkajs has no accumulator: one sendBatch is one request).",
    '',
  );
  for (const c of contenders) {
    lines.push(`**${c.label}**`, '');
    for (const s of c.settings) lines.push(`- ${s}`);
    lines.push('');
  }
  if (heartbeat !== undefined) {
    lines.push(
      '## Heartbeat timing under load',
      '',
      `${heartbeat.heartbeats} heartbeat records in ${fix(heartbeat.seconds, 1)} s while the task wrote ${int(heartbeat.dataPerSec)} data records/s ` +
        `(CPU ${fix(heartbeat.cpuS, 1)} s, peak RSS ${fix(heartbeat.peakRssMiB, 0)} MiB, load before ${fix(heartbeat.loadBefore, 2)})` +
        `${heartbeat.problems.length > 0 ? `; PROBLEMS: ${heartbeat.problems.join('; ')}` : ''}.`,
      '',
      heartbeatTable(heartbeat),
      '',
    );
    if (charts.heartbeat !== undefined) lines.push(`![heartbeat jitter](${charts.heartbeat})`, '');
    for (const s of heartbeat.settings) lines.push(`- ${s}`);
    lines.push('');
  }
  if (series.length > 0) {
    lines.push(
      '## How the cost grows',
      '',
      'Each point is one run, stopped a fixed time after its first record (or at the end of its input), with the',
      'steady window of the main table: 10% to 90% of the records in the topic when the stop was sent. A worker',
      'stops gracefully and commits; its committed offsets must cover exactly the records in the topic.',
      '',
    );
    for (const s of series) lines.push(seriesMarkdown(s, charts.series[s.id]));
  }
  if (results.length > 0) lines.push('## Every run', '', runsTable(results), '');
  const seriesRuns = series.flatMap((s) => [...s.points.map((p) => p.result), ...(s.slow ?? []).map((w) => w.result)]);
  if (seriesRuns.length > 0)
    lines.push(
      '## Every series run',
      '',
      'In the order of the series above; "uncommitted at stop": records acknowledged after the final commit',
      '(a worker waits its grace period for in-flight records, then commits what is acknowledged; these would be',
      'sent again after a restart).',
      '',
      runsTable(seriesRuns),
      '',
    );
  lines.push(
    '## How completion is measured',
    '',
    '- The harness polls the topic\'s end offset (ListOffsets) every 50 ms; "first record" and "all in topic" are',
    '  the first polls that see them (late by up to 50 ms, for every side alike).',
    '- Kafka Connect and Tributary run until stopped: once all records are in the topic the harness sends',
    "  SIGTERM; both stop gracefully (Connect's shutdown hook stops the herder, the task's final",
    '  `commitOffsets`, the file offset store; Tributary waits for in-flight records and flushes offsets) and',
    '  exit. The wall time ends at the exit, so it includes the final commit and the shutdown.',
    "- After each run the topic must hold exactly N records and the worker's offsets file must hold the",
    "  input file's size as the committed position (Connect's file is Java-serialized, but its keys and",
    '  values are the JSON bytes, so `{"position":N}` is found verbatim); runs that fail a check are shown',
    '  and left out of the medians.',
    "- CPU seconds: the harness's `cutime + cstime` (/proc/self/stat) grows by exactly what a child used",
    "  when it is reaped; peak RSS: the child's `VmHWM` sampled every 100 ms until it exits.",
  );
  return `${lines.join('\n')}\n`;
}
